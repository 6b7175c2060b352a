package populate

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"

	"github.com/jackc/pgx/v5"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// Computed tables come from three places: the service's code (the examples), its tables file
// (TABLES_FILE) and the API (PUT /v1/tables/{name}). The last two are stored in
// table_definitions, so that every replica populates the same tables: a replica seeds its file's
// definitions at start, reads every stored one, and then follows the changes, which each write
// announces on populate_tables in its own transaction. A replica that is asked about a table it
// has not heard of yet (its notification still on the way) reads it there too. Every table's
// change triggers are installed here as well: at start, and with each definition the API writes.

// envPattern is what a variable named by function_secret_env looks like.
var envPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// StartTables seeds the tables file's definitions into table_definitions (unless the API has
// written or retired the table since: a warning says the file's entry is ignored) and registers
// every stored table. It runs at start, after Registry.Check has checked the file's tables.
func (e *Engine) StartTables(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		for _, t := range e.tables.All() {
			if t.Source() != SourceFile {
				continue
			}
			p := definitionRow(t)
			wrote, err := queries.TableDefinitionSeed(ctx, tx, dbsqlc.TableDefinitionSeedParams(p))
			if err != nil {
				return fmt.Errorf("seed computed table %s: %w", t.Name, err)
			}
			if len(wrote) == 0 {
				e.cfg.Metrics.warn("the tables file's definition is ignored: the table was changed or retired over the API since",
					"table", t.Name)
				continue
			}
			if err := queries.TablesNotify(ctx, tx, t.Name); err != nil {
				return fmt.Errorf("announce computed table %s: %w", t.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return e.LoadTables(ctx)
}

// LoadTables registers every stored table as table_definitions holds it now, and unregisters
// the stored tables it no longer holds. A stored table that does not check against the database
// (its target dropped since, say) is left out with a warning: the service goes on with the others.
func (e *Engine) LoadTables(ctx context.Context) error {
	e.tablesMu.Lock()
	defer e.tablesMu.Unlock()
	rows, err := queries.TableDefinitionList(ctx, e.pool)
	if err != nil {
		return fmt.Errorf("read computed table definitions: %w", err)
	}
	var tables []*Table
	for _, r := range rows {
		t, err := e.checkedTable(ctx, r)
		if err != nil {
			return err
		}
		if t != nil {
			tables = append(tables, t)
		}
	}
	for _, name := range e.tables.replaceStored(tables) {
		e.cfg.Metrics.warn("a stored computed table has the name of one of the service's own; it is ignored", "table", name)
	}
	return nil
}

// ReloadTable registers the stored table name as table_definitions holds it now, or
// unregisters it when it is retired or gone: what a notification on populate_tables asks.
func (e *Engine) ReloadTable(ctx context.Context, name string) error {
	e.tablesMu.Lock()
	defer e.tablesMu.Unlock()
	_, err := e.reloadLocked(ctx, name)
	return err
}

// reloadLocked is ReloadTable under tablesMu; it returns the table registered, nil when none is.
func (e *Engine) reloadLocked(ctx context.Context, name string) (*Table, error) {
	r, err := queries.TableDefinitionGet(ctx, e.pool, name)
	if errors.Is(err, pgx.ErrNoRows) {
		e.tables.drop(name)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read computed table %s: %w", name, err)
	}
	t, err := e.checkedTable(ctx, r)
	if err != nil || t == nil {
		e.tables.drop(name)
		return nil, err
	}
	if !e.tables.set(t) {
		return nil, nil
	}
	return t, nil
}

// checkedTable is a stored definition as a table, checked against the database; nil, with a
// warning, when it does not check.
func (e *Engine) checkedTable(ctx context.Context, r dbsqlc.TableDefinition) (*Table, error) {
	t := tableOf(r)
	err := t.validate()
	if err == nil {
		err = t.check(ctx, e.pool)
	}
	if errors.Is(err, ErrInvalidTable) {
		e.cfg.Metrics.warn("a stored computed table does not check against the database; it is not populated here", "table", t.Name, "error", err)
		return nil, nil
	}
	return t, err
}

// Table returns the computed table registered as name. A name this replica has not heard of is
// looked up in table_definitions, since a table just defined through another replica is known
// there before its notification arrives here: a request or a job that names it must not fail.
func (e *Engine) Table(ctx context.Context, name string) (*Table, error) {
	t, err := e.tables.Get(name)
	if err == nil || !errors.Is(err, problem.ErrNotFound) || !namePattern.MatchString(name) {
		return t, err
	}
	e.tablesMu.Lock()
	defer e.tablesMu.Unlock()
	if t, err := e.tables.Get(name); err == nil {
		return t, nil // registered while this waited
	}
	found, lerr := e.reloadLocked(ctx, name)
	if lerr != nil {
		return nil, lerr
	}
	if found == nil {
		return nil, err
	}
	return found, nil
}

// PutTable defines the computed table def.Name, or replaces its definition, as the API asks: the
// definition is checked as the tables file's are at start (a 422 naming the field otherwise),
// the change triggers of its upstream tables and target are installed, and the definition, the
// schedule of its keys (unless auto_schedule is off) and its notification are written in one
// transaction. It returns the table and whether it is new. A table of the service's code cannot
// be replaced.
func (e *Engine) PutTable(ctx context.Context, def Table) (*Table, bool, error) {
	t := &Table{Name: def.Name, Target: def.Target, PrimaryKey: def.PrimaryKey, KeySource: def.KeySource,
		Upstream: def.Upstream, AutoSchedule: def.AutoSchedule, FunctionURL: def.FunctionURL,
		FunctionSecretEnv: def.FunctionSecretEnv, source: SourceAPI}
	if t.AutoSchedule == nil {
		auto := true
		t.AutoSchedule = &auto
	}
	if err := e.checkDefinition(t); err != nil {
		return nil, false, err
	}
	created := false
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		active, err := queries.TableDefinitionLock(ctx, tx, t.Name)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("lock computed table %s: %w", t.Name, err)
		}
		created = !active
		if err := t.check(ctx, tx); err != nil {
			return err
		}
		if err := installTableTriggers(ctx, tx, t); err != nil {
			return err
		}
		if err := queries.TableDefinitionPut(ctx, tx, definitionRow(t)); err != nil {
			return fmt.Errorf("write computed table %s: %w", t.Name, err)
		}
		if t.autoSchedule() {
			// A new table's keys are scheduled at once, not at the next periodic pass; a
			// replaced one's jobs that its new key_source no longer has are cleaned up first.
			if _, err := e.river.InsertTx(ctx, tx, queue.PopulateScheduleArgs{Table: t.Name, Cleanup: !created}, nil); err != nil {
				return fmt.Errorf("enqueue the schedule of %s: %w", t.Name, err)
			}
		}
		if err := queries.TablesNotify(ctx, tx, t.Name); err != nil {
			return fmt.Errorf("announce computed table %s: %w", t.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	e.tablesMu.Lock()
	e.tables.set(t)
	e.tablesMu.Unlock()
	return t, created, nil
}

// checkDefinition checks what PUT /v1/tables/{name} can without the database: the definition as
// a tables file's (validate), a make function URL, a secret variable set here, and no other
// table calling that URL with another secret (the calls to a URL are signed one way). A name of
// the service's code is a conflict.
func (e *Engine) checkDefinition(t *Table) error {
	if cur, err := e.tables.Get(t.Name); err == nil && cur.Source() == SourceCode {
		return problem.Conflictf("computed table %s is defined in the service's code; it cannot be changed over the API", t.Name)
	}
	if err := t.validate(); err != nil {
		return err
	}
	u, err := url.Parse(t.FunctionURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid(t, "function_url", "function_url %q is not an http or https URL", t.FunctionURL)
	}
	if t.FunctionSecretEnv != "" {
		if !envPattern.MatchString(t.FunctionSecretEnv) {
			return invalid(t, "function_secret_env", "function_secret_env %q is not a variable name", t.FunctionSecretEnv)
		}
		if e.getenv(t.FunctionSecretEnv) == "" {
			return invalid(t, "function_secret_env", "%s is not set on the worker: every replica needs it to sign the table's calls", t.FunctionSecretEnv)
		}
	}
	for _, other := range e.tables.All() {
		if other.Name != t.Name && other.FunctionURL == t.FunctionURL && other.FunctionSecretEnv != t.FunctionSecretEnv {
			return invalid(t, "function_url", "function_url is table %s's, whose calls are signed with another secret", other.Name)
		}
	}
	return nil
}

// getenv reads the worker's environment (Config.Getenv).
func (e *Engine) getenv(name string) string {
	if e.cfg.Getenv != nil {
		return e.cfg.Getenv(name)
	}
	return os.Getenv(name)
}

// RetireTable retires the stored table name: no replica schedules or makes its keys from then
// on, while its jobs, its populate runs and its target's rows stay readable. A table of the
// service's code cannot be retired; one never defined, or retired already, is not found.
func (e *Engine) RetireTable(ctx context.Context, name string) error {
	if cur, err := e.tables.Get(name); err == nil && cur.Source() == SourceCode {
		return problem.Conflictf("computed table %s is defined in the service's code; it cannot be retired over the API", name)
	}
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		n, err := queries.TableDefinitionRetire(ctx, tx, name)
		if err != nil {
			return fmt.Errorf("retire computed table %s: %w", name, err)
		}
		if n == 0 {
			return fmt.Errorf("computed table %q: %w", name, problem.ErrNotFound)
		}
		if err := queries.TablesNotify(ctx, tx, name); err != nil {
			return fmt.Errorf("announce computed table %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.tablesMu.Lock()
	e.tables.drop(name)
	e.tablesMu.Unlock()
	return nil
}

// InstallTriggers puts statement triggers on every upstream table (inserts, updates, deletes,
// truncates) and every target table (deletes, truncates) that notify populate_change. Statement
// triggers, not row triggers: a bulk insert of a million rows sends one notification. A table
// defined over the API whose triggers cannot be installed any more (its upstream table dropped
// since) is only warned about: the service starts for the others.
func (e *Engine) InstallTriggers(ctx context.Context) error {
	for _, t := range e.tables.All() {
		err := e.installTriggers(ctx, t)
		if err != nil && t.Source() == SourceAPI && isDefinitionError(err) {
			e.cfg.Metrics.warn("cannot install a computed table's change triggers; its changes schedule nothing", "table", t.Name, "error", err)
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// installTriggers installs the triggers of one table.
func (e *Engine) installTriggers(ctx context.Context, t *Table) error {
	for _, u := range t.Upstream {
		if err := createTrigger(ctx, e.pool, u, "populate_worker_upstream", "INSERT OR UPDATE OR DELETE OR TRUNCATE"); err != nil {
			return err
		}
	}
	return createTrigger(ctx, e.pool, t.Target, "populate_worker_target", "DELETE OR TRUNCATE")
}

func createTrigger(ctx context.Context, db postgres.DBTX, table, name, events string) error {
	_, err := db.Exec(ctx, `CREATE OR REPLACE TRIGGER `+name+` AFTER `+events+` ON `+ident(table)+
		` FOR EACH STATEMENT EXECUTE FUNCTION populate_worker.notify_change()`)
	if err != nil {
		return fmt.Errorf("install trigger %s on %s: %w", name, table, err)
	}
	return nil
}

// installTableTriggers puts t's change triggers on its upstream tables and its target, as
// InstallTriggers does at start; a table that does not exist, or that the service may not put a
// trigger on, is the definition's fault.
func installTableTriggers(ctx context.Context, tx pgx.Tx, t *Table) error {
	for i, u := range t.Upstream {
		if err := createTrigger(ctx, tx, u, "populate_worker_upstream", "INSERT OR UPDATE OR DELETE OR TRUNCATE"); err != nil {
			return definitionError(t, fmt.Sprintf("upstream[%d]", i), err)
		}
	}
	if err := createTrigger(ctx, tx, t.Target, "populate_worker_target", "DELETE OR TRUNCATE"); err != nil {
		return definitionError(t, "target", err)
	}
	return nil
}

// definitionError is err as the fault of t's field when the statement caused it.
func definitionError(t *Table, field string, err error) error {
	if isDefinitionError(err) {
		return invalid(t, field, "%v", err)
	}
	return err
}

// tableOf is a stored definition as a table.
func tableOf(r dbsqlc.TableDefinition) *Table {
	auto := r.AutoSchedule
	return &Table{Name: r.Name, Target: r.Target, PrimaryKey: r.PrimaryKey, KeySource: r.KeySource,
		Upstream: slices.Clip(r.Upstream), FunctionURL: r.FunctionUrl, FunctionSecretEnv: r.FunctionSecretEnv,
		AutoSchedule: &auto, source: Source(r.Source)}
}

// definitionRow is t as table_definitions stores it.
func definitionRow(t *Table) dbsqlc.TableDefinitionPutParams {
	upstream := t.Upstream
	if upstream == nil {
		upstream = []string{}
	}
	return dbsqlc.TableDefinitionPutParams{Name: t.Name, Target: t.Target, PrimaryKey: t.PrimaryKey, KeySource: t.KeySource,
		Upstream: upstream, FunctionUrl: t.FunctionURL, FunctionSecretEnv: t.FunctionSecretEnv, AutoSchedule: t.autoSchedule()}
}
