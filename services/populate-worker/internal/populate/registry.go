package populate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// Registry holds the computed tables a service populates, by name: those of the service's code
// and its tables file, registered at start, and those stored in table_definitions (the API's and
// the tables files'), which come and go while it runs. A registered *Table is never changed: a
// new definition replaces it.
type Registry struct {
	mu     sync.RWMutex
	tables map[string]*Table
	// version counts the changes since start, so that what is built from the tables (the change
	// listener's map of watched tables, the signing keys) knows when to build again.
	version uint64
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tables: map[string]*Table{}} }

// Register adds t after checking its definition. Names are unique.
func (r *Registry) Register(t Table) error {
	if err := t.validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tables[t.Name]; ok {
		return fmt.Errorf("%w: table %q registered twice", ErrInvalidTable, t.Name)
	}
	r.tables[t.Name] = &t
	r.version++
	return nil
}

// Version changes whenever the registered tables do.
func (r *Registry) Version() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
}

// Names returns every table's name, sorted.
func (r *Registry) Names() []string {
	var out []string
	for _, t := range r.All() {
		out = append(out, t.Name)
	}
	return out
}

// set registers or replaces a stored table (from the tables file or the API). A name the code
// registered stays the code's: set refuses it and says so.
func (r *Registry) set(t *Table) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.tables[t.Name]; ok && cur.Source() == SourceCode {
		return false
	}
	r.tables[t.Name] = t
	r.version++
	return true
}

// drop unregisters a stored table; the code's tables stay.
func (r *Registry) drop(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.tables[name]; ok && cur.Source() != SourceCode {
		delete(r.tables, name)
		r.version++
	}
}

// replaceStored makes tables the stored tables: every table not of the code is dropped, then
// tables are registered, but for those whose name the code has, which it returns.
func (r *Registry) replaceStored(tables []*Table) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, t := range r.tables {
		if t.Source() != SourceCode {
			delete(r.tables, name)
		}
	}
	var shadowed []string
	for _, t := range tables {
		if _, ok := r.tables[t.Name]; ok {
			shadowed = append(shadowed, t.Name)
			continue
		}
		r.tables[t.Name] = t
	}
	r.version++
	return shadowed
}

// Get returns the table registered under name, or a not-found problem.
func (r *Registry) Get(name string) (*Table, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tables[name]
	if !ok {
		return nil, fmt.Errorf("computed table %q: %w", name, problem.ErrNotFound)
	}
	return t, nil
}

// All returns every table sorted by name.
func (r *Registry) All() []*Table {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Table, 0, len(r.tables))
	for _, t := range r.tables {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Table) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// LoadFile registers the tables listed in a JSON file: an array of objects with name, target,
// primary_key, key_source, upstream and function_url. Tables from a file can only use HTTP
// makes, since there is no Go code to name.
func (r *Registry) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read tables file: %w", err)
	}
	var tables []Table
	if err := json.Unmarshal(b, &tables); err != nil {
		return fmt.Errorf("parse tables file %s: %w", path, err)
	}
	for _, t := range tables {
		t.source = SourceFile
		if t.FunctionURL == "" {
			return fmt.Errorf("%w %s in %s: function_url is required in a tables file", ErrInvalidTable, t.Name, path)
		}
		if err := r.Register(t); err != nil {
			return fmt.Errorf("tables file %s: %w", path, err)
		}
	}
	return nil
}

// Check verifies every table against the database: the target and its primary-key columns exist
// and key_source runs and produces those columns. It runs at start, so that a bad definition
// stops the service instead of failing every job.
func (r *Registry) Check(ctx context.Context, db postgres.DBTX) error {
	var errs []error
	for _, t := range r.All() {
		errs = append(errs, t.check(ctx, db))
	}
	return errors.Join(errs...)
}

// check also records the kinds of key_source's key columns, which restrictions are checked
// against: the jobs table's keys are built from them. Its error names the field at fault: the
// target, a key column the target lacks, or key_source.
func (t *Table) check(ctx context.Context, db postgres.DBTX) error {
	for _, q := range []struct{ field, sql string }{
		{"target", "SELECT " + pkList(t, "t") + " FROM " + t.target() + " t LIMIT 0"},
		{"key_source", "SELECT " + pkList(t, "s") + " FROM (" + t.KeySource + ") s LIMIT 0"},
	} {
		rows, err := db.Query(ctx, q.sql)
		if err == nil {
			kinds := map[string]valueKind{}
			for i, fd := range rows.FieldDescriptions() {
				kinds[t.PrimaryKey[i]] = kindOf(fd.DataTypeOID)
			}
			t.keyKinds = kinds
			rows.Close()
			err = rows.Err()
		}
		if err == nil {
			continue
		}
		field := q.field
		if pgErr := (*pgconn.PgError)(nil); q.field == "target" && errors.As(err, &pgErr) && pgErr.Code == undefinedColumn {
			field = "primary_key" // the target exists without one of the key columns
		}
		if !isDefinitionError(err) {
			return fmt.Errorf("check computed table %s: %w", t.Name, err)
		}
		return invalid(t, field, "%s: %v", field, err)
	}
	return nil
}

// undefinedColumn is Postgres's SQLSTATE for a column that does not exist.
const undefinedColumn = "42703"

// isDefinitionError tells an error the statement itself caused (a missing table or column, bad
// SQL, no permission), which only a new definition fixes, from a failure to run it at all: a
// lost connection, a cancelled statement, a conflict with another transaction, a server error.
func isDefinitionError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	switch pgErr.Code[:2] {
	case "08", "25", "40", "53", "57", "58", "XX":
		return false
	}
	return true
}

// pkList is "alias.a, alias.b" over the primary key.
func pkList(t *Table, alias string) string {
	out := ""
	for i, c := range t.PrimaryKey {
		if i > 0 {
			out += ", "
		}
		out += alias + "." + ident(c)
	}
	return out
}
