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

	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// Registry holds the computed tables a service populates, by name.
type Registry struct {
	mu     sync.RWMutex
	tables map[string]*Table
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
	return nil
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
// against: the jobs table's keys are built from them.
func (t *Table) check(ctx context.Context, db postgres.DBTX) error {
	for _, q := range []string{
		"SELECT " + pkList(t, "t") + " FROM " + t.target() + " t LIMIT 0",
		"SELECT " + pkList(t, "s") + " FROM (" + t.KeySource + ") s LIMIT 0",
	} {
		rows, err := db.Query(ctx, q)
		if err == nil {
			kinds := map[string]valueKind{}
			for i, fd := range rows.FieldDescriptions() {
				kinds[t.PrimaryKey[i]] = kindOf(fd.DataTypeOID)
			}
			t.keyKinds = kinds
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			return fmt.Errorf("%w %s: %w", ErrInvalidTable, t.Name, err)
		}
	}
	return nil
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
