package populate

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
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
	// column types; Registry.Check fills it at start, before any request reads it, and a stored
	// definition's check before the table is registered.
	keyKinds map[string]valueKind

	// source is where the definition comes from; empty for the service's code.
	source Source
}

var (
	namePattern  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	identPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$`)
)

// ErrInvalidTable is wrapped by every registration error.
var ErrInvalidTable = errors.New("invalid computed table")

// TableError is a definition at fault: the field of the definition that is (name, target,
// primary_key, key_source, upstream[i], function_url, function_secret_env) and what is wrong
// with it. It is an ErrInvalidTable, and over the API a 422 naming the field.
type TableError struct {
	Table  string
	Field  string
	Detail string
}

func (e *TableError) Error() string {
	if e.Table == "" {
		return fmt.Sprintf("%s: %s", ErrInvalidTable, e.Detail)
	}
	return fmt.Sprintf("%s %s: %s", ErrInvalidTable, e.Table, e.Detail)
}

// Is makes every TableError an ErrInvalidTable.
func (e *TableError) Is(target error) bool { return target == ErrInvalidTable }

// Unwrap is the problem a client sees: 422 naming the field.
func (e *TableError) Unwrap() error {
	return problem.Unprocessablef(e.Field, "%s", e.Detail)
}

// invalid is a TableError of t about field.
func invalid(t *Table, field, format string, args ...any) *TableError {
	return &TableError{Table: t.Name, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// validate checks the table's definition without the database.
func (t *Table) validate() error {
	switch {
	case !namePattern.MatchString(t.Name):
		return &TableError{Field: "name", Detail: fmt.Sprintf("name %q must match %s", t.Name, namePattern)}
	case !identPattern.MatchString(t.Target):
		return invalid(t, "target", "target %q is not a [schema.]table name", t.Target)
	case len(t.PrimaryKey) == 0:
		return invalid(t, "primary_key", "primary_key is empty")
	case strings.TrimSpace(t.KeySource) == "":
		return invalid(t, "key_source", "key_source is empty")
	case (t.Fetch == nil) != (t.Compute == nil) && t.Make == nil:
		return invalid(t, "make", "a three-part make needs both Fetch and Compute")
	case t.FunctionURL == "" && t.Make == nil && t.Compute == nil:
		return invalid(t, "function_url", "no make (Go function or function_url)")
	case t.FunctionURL != "" && (t.Make != nil || t.Compute != nil):
		return invalid(t, "function_url", "both a Go make and function_url")
	}
	for i, c := range t.PrimaryKey {
		if !identPattern.MatchString(c) || strings.Contains(c, ".") || slices.Contains(t.PrimaryKey[:i], c) {
			return invalid(t, fmt.Sprintf("primary_key[%d]", i), "primary key column %q", c)
		}
	}
	for i, u := range t.Upstream {
		if !identPattern.MatchString(u) {
			return invalid(t, fmt.Sprintf("upstream[%d]", i), "upstream %q is not a [schema.]table name", u)
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

// Source says where a computed table's definition comes from.
type Source string

// The sources of a definition.
const (
	SourceCode Source = "code" // the service's code; changed only by a new release
	SourceFile Source = "file" // TABLES_FILE, seeded into table_definitions at start
	SourceAPI  Source = "api"  // PUT /v1/tables/{name}
)

// Source is where the table's definition comes from.
func (t *Table) Source() Source {
	if t.source == "" {
		return SourceCode
	}
	return t.source
}

// autoSchedule reports whether background passes schedule the table's keys.
func (t *Table) autoSchedule() bool { return t.AutoSchedule == nil || *t.AutoSchedule }

// targetHasSQL is the statement of targetHas, whose one argument is the key.
func targetHasSQL(t *Table) string {
	return `SELECT EXISTS (SELECT 1 FROM ` + t.target() + ` t,
		jsonb_populate_record(NULL::` + t.target() + `, $1::jsonb) k WHERE ` + t.pkMatch("t", "k") + `)`
}
