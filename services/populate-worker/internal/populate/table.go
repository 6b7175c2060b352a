package populate

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/postgres"
)

// Row is one row a make produces, column name to value. Values travel as JSON and are converted
// to the target's column types by Postgres, so a make written in any language can produce them.
type Row map[string]any

// MakeFunc computes the rows of key inside the transaction that will insert them. Anything it
// writes through tx commits with the job's success or is rolled back with its error.
type MakeFunc func(ctx context.Context, tx pgx.Tx, key Key) ([]Row, error)

// FetchFunc reads the inputs of key. In a three-part make it runs twice: outside the transaction
// before Compute, and inside it before the insert; the rows are only inserted when both reads
// are equal (reflect.DeepEqual), so a long computation never holds a transaction open and never
// commits results computed from inputs that changed meanwhile.
type FetchFunc func(ctx context.Context, db postgres.DBTX, key Key) (any, error)

// ComputeFunc computes the rows of key from what Fetch returned, with no transaction open.
type ComputeFunc func(ctx context.Context, key Key, fetched any) ([]Row, error)

// Table is one computed table.
type Table struct {
	// Name is how the API and the jobs table name the table (table_name); URL-safe.
	Name string `json:"name"`

	// Target is the table make fills, optionally schema-qualified ("lab.session_stats").
	Target string `json:"target"`

	// PrimaryKey lists the target's primary-key columns; key_source must produce them all.
	PrimaryKey []string `json:"primary_key"`

	// KeySource is an SQL query producing every key that should exist in Target.
	KeySource string `json:"key_source"`

	// Upstream lists the tables key_source reads. Inserts there schedule keys and deletes there
	// clean jobs up, through statement triggers the service installs.
	Upstream []string `json:"upstream,omitempty"`

	// AutoSchedule false turns the background schedule off for the table (DataJoint's explicit
	// model): upstream inserts and the periodic pass schedule nothing; keys are scheduled by
	// POST /v1/tables/{name}/schedule and populate calls only. Absent means true.
	AutoSchedule *bool `json:"auto_schedule,omitempty"`

	// FunctionURL, when set, makes each key by POSTing it as JSON to the URL.
	FunctionURL string `json:"function_url,omitempty"`

	// FunctionSecretEnv names the environment variable holding the secret this table's function
	// calls are signed with, instead of the service's FUNCTION_SECRET (the secret itself never
	// goes in a tables file).
	FunctionSecretEnv string `json:"function_secret_env,omitempty"`

	// Make, Fetch and Compute are the Go makes: Make alone, or Fetch and Compute (three-part),
	// or Fetch, Compute and Make together.
	Make    MakeFunc    `json:"-"`
	Fetch   FetchFunc   `json:"-"`
	Compute ComputeFunc `json:"-"`

	// keyKinds holds the JSON type of each primary-key column's values, from key_source's
	// column types; Registry.Check fills it at start, before any request reads it.
	keyKinds map[string]valueKind
}

var (
	namePattern  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	identPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$`)
)

// ErrInvalidTable is wrapped by every registration error.
var ErrInvalidTable = errors.New("invalid computed table")

// validate checks the table's definition without the database.
func (t *Table) validate() error {
	switch {
	case !namePattern.MatchString(t.Name):
		return fmt.Errorf("%w: name %q must match %s", ErrInvalidTable, t.Name, namePattern)
	case !identPattern.MatchString(t.Target):
		return fmt.Errorf("%w %s: target %q is not a [schema.]table name", ErrInvalidTable, t.Name, t.Target)
	case len(t.PrimaryKey) == 0:
		return fmt.Errorf("%w %s: primary_key is empty", ErrInvalidTable, t.Name)
	case strings.TrimSpace(t.KeySource) == "":
		return fmt.Errorf("%w %s: key_source is empty", ErrInvalidTable, t.Name)
	case (t.Fetch == nil) != (t.Compute == nil) && t.Make == nil:
		return fmt.Errorf("%w %s: a three-part make needs both Fetch and Compute", ErrInvalidTable, t.Name)
	case t.FunctionURL == "" && t.Make == nil && t.Compute == nil:
		return fmt.Errorf("%w %s: no make (Go function or function_url)", ErrInvalidTable, t.Name)
	case t.FunctionURL != "" && (t.Make != nil || t.Compute != nil):
		return fmt.Errorf("%w %s: both a Go make and function_url", ErrInvalidTable, t.Name)
	}
	for _, c := range t.PrimaryKey {
		if !identPattern.MatchString(c) || strings.Contains(c, ".") {
			return fmt.Errorf("%w %s: primary key column %q", ErrInvalidTable, t.Name, c)
		}
	}
	for _, u := range t.Upstream {
		if !identPattern.MatchString(u) {
			return fmt.Errorf("%w %s: upstream %q is not a [schema.]table name", ErrInvalidTable, t.Name, u)
		}
	}
	return nil
}

// ident quotes a possibly schema-qualified name for splicing into SQL.
func ident(name string) string { return pgx.Identifier(strings.Split(name, ".")).Sanitize() }

// target is the quoted target table.
func (t *Table) target() string { return ident(t.Target) }

// pkMatch is the join condition "l.a = r.a AND l.b = r.b" over the primary key: only the primary
// key, so that same-named secondary columns never take part (DataJoint #1405).
func (t *Table) pkMatch(l, r string) string {
	parts := make([]string, len(t.PrimaryKey))
	for i, c := range t.PrimaryKey {
		q := ident(c)
		parts[i] = l + "." + q + " = " + r + "." + q
	}
	return strings.Join(parts, " AND ")
}

// keyObject is the jsonb_build_object expression of alias's primary-key columns: the canonical
// key whose text the key hash covers.
func (t *Table) keyObject(alias string) string {
	parts := make([]string, len(t.PrimaryKey))
	for i, c := range t.PrimaryKey {
		parts[i] = "'" + c + "', " + alias + "." + ident(c) // c matched identPattern: no quotes
	}
	return "jsonb_build_object(" + strings.Join(parts, ", ") + ")"
}

// keySourceKeys is a query over the key_source producing column "key" (jsonb) for each key.
func (t *Table) keySourceKeys() string {
	return "SELECT " + t.keyObject("s") + " AS key FROM (" + t.KeySource + ") s"
}

// hasPK reports whether column is part of the primary key.
func (t *Table) hasPK(column string) bool {
	for _, c := range t.PrimaryKey {
		if c == column {
			return true
		}
	}
	return false
}

// autoSchedule reports whether background passes schedule the table's keys.
func (t *Table) autoSchedule() bool { return t.AutoSchedule == nil || *t.AutoSchedule }

// targetHasSQL is the statement of targetHas, whose one argument is the key.
func targetHasSQL(t *Table) string {
	return `SELECT EXISTS (SELECT 1 FROM ` + t.target() + ` t,
		jsonb_populate_record(NULL::` + t.target() + `, $1::jsonb) k WHERE ` + t.pkMatch("t", "k") + `)`
}
