// Package testdb gives each test an isolated, fully migrated, real Postgres database, so that
// every test can run in parallel: New clones a fresh database from a migrated template (tens of
// milliseconds), Tx opens a transaction on a shared migrated database and rolls it back when the
// test ends.
//
// The server comes from DATABASE_URL (make test sets it, finding or starting a Postgres), else
// postgres://postgres@127.0.0.1:5432/postgres. The template's name carries the migrations'
// fingerprint, so changed migrations get a new template; creating it is serialised across test
// processes by an advisory lock.
package testdb

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/migrations"
	"drover.dev/shared/testdb/dbsqlc"
)

const defaultURL = "postgres://postgres@127.0.0.1:5432/postgres"

// templateLock serialises template creation across test binaries running at once.
const templateLock = 0x64726f7674706c // "drovtpl"

// queries are the statements of query.sql, compiled by sqlc; each takes the DBTX to run on.
var queries = dbsqlc.New()

// prepareTemplate creates the template and the shared database once per test binary and
// remembers the outcome.
var prepareTemplate = sync.OnceValue(func() error { return createTemplate(context.Background()) })

// ServerURL is the URL of the test server's maintenance database.
func ServerURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return defaultURL
}

func templateName() string { return "drover_tpl_" + migrations.Fingerprint() }
func sharedName() string   { return "drover_shared_" + migrations.Fingerprint() }

// New returns the URL of a fresh migrated database that is dropped when the test ends.
func New(t testing.TB) string {
	t.Helper()
	prepare(t)
	name := fmt.Sprintf("drover_test_%x", rand.Uint64())
	adminExec(t, "CREATE DATABASE "+name+" TEMPLATE "+templateName())
	t.Cleanup(func() {
		if err := adminExecErr("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	return WithDatabase(t, ServerURL(), name)
}

// NewPool returns a pool on a fresh migrated database (see New), closed when the test ends.
// search_path is set to schema when it is not empty, as a service's own pool has it.
func NewPool(t testing.TB, schema string) *pgxpool.Pool {
	t.Helper()
	return pool(t, New(t), schema)
}

// NewPoolFor returns a pool on an existing database URL (from New), closed when the test ends.
func NewPoolFor(t testing.TB, databaseURL string) *pgxpool.Pool {
	t.Helper()
	return pool(t, databaseURL, "")
}

var (
	sharedMu   sync.Mutex
	sharedPool = map[string]*pgxpool.Pool{}
)

// Tx returns a transaction on the shared migrated database, rolled back when the test ends.
// search_path is set to schema when it is not empty.
func Tx(t testing.TB, schema string) pgx.Tx {
	t.Helper()
	prepare(t)
	sharedMu.Lock()
	p, ok := sharedPool[schema]
	if !ok {
		p = openPool(t, WithDatabase(t, ServerURL(), sharedName()), schema)
		sharedPool[schema] = p
	}
	sharedMu.Unlock()
	ctx := context.Background()
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatalf("begin test transaction: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// WithDatabase returns databaseURL pointing at database name instead.
func WithDatabase(t testing.TB, databaseURL, name string) string {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil || u.Scheme == "" {
		t.Fatalf("DATABASE_URL must be a postgres:// URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func pool(t testing.TB, databaseURL, schema string) *pgxpool.Pool {
	t.Helper()
	p := openPool(t, databaseURL, schema)
	t.Cleanup(p.Close)
	return p
}

func openPool(t testing.TB, databaseURL, schema string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		t.Fatalf("parse test database url: %v", err)
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = schema + ",public"
	}
	cfg.MaxConns = 8
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open test pool: %v", err)
	}
	return p
}

// prepare makes sure the template and the shared database exist, once per test binary.
func prepare(t testing.TB) {
	t.Helper()
	if err := prepareTemplate(); err != nil {
		t.Fatalf("prepare test databases on %s: %v", redacted(ServerURL()), err)
	}
}

func createTemplate(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return fmt.Errorf("connect (is Postgres running? make test starts one): %w", err)
	}
	defer conn.Close(ctx)
	if err := queries.TemplateLockAcquire(ctx, conn, templateLock); err != nil {
		return err
	}
	defer queries.TemplateLockRelease(ctx, conn, templateLock) //nolint:errcheck // released at close anyway
	// Both must exist: a run of another migration set drops a template it finds unused as
	// stale, while the shared database, still in use, survives.
	haveTemplate, err := queries.DatabaseExists(ctx, conn, templateName())
	if err != nil {
		return err
	}
	haveShared, err := queries.DatabaseExists(ctx, conn, sharedName())
	if err != nil {
		return err
	}
	if haveTemplate && haveShared {
		return markUsed(ctx, conn)
	}
	// Build under a temporary name and rename, so a crash never leaves a half-migrated template.
	building := templateName() + "_building"
	for _, sql := range []string{
		"DROP DATABASE IF EXISTS " + building,
		"DROP DATABASE IF EXISTS " + templateName(),
		"CREATE DATABASE " + building,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return err
		}
	}
	u, _ := url.Parse(ServerURL())
	u.Path = "/" + building
	if err := migrations.Up(ctx, u.String(), slog.New(slog.DiscardHandler)); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+templateName()); err != nil {
		return err
	}
	if !haveShared {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+sharedName()+" TEMPLATE "+templateName()); err != nil {
			return err
		}
	}
	if err := markUsed(ctx, conn); err != nil {
		return err
	}
	dropStale(ctx, conn)
	return nil
}

// markUsed records in the template's and shared database's comments when a test binary last
// used them, so that dropStale leaves alone the sets other checkouts on the same server test.
func markUsed(ctx context.Context, conn *pgx.Conn) error {
	for _, name := range []string{templateName(), sharedName()} {
		sql := fmt.Sprintf("COMMENT ON DATABASE %s IS 'drover test, used %d'", name, time.Now().Unix())
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("mark %s used: %w", name, err)
		}
	}
	return nil
}

// dropStale removes templates and shared databases of other migration sets that no test binary
// used for a day. One still in use by another test run is left for next time.
func dropStale(ctx context.Context, conn *pgx.Conn) {
	names, err := queries.DatabaseListStale(ctx, conn, dbsqlc.DatabaseListStaleParams{Template: templateName(), Shared: sharedName()})
	if err != nil {
		return
	}
	for _, name := range names {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	}
}

func adminExec(t testing.TB, sql string) {
	t.Helper()
	if err := adminExecErr(sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func adminExecErr(sql string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func redacted(databaseURL string) string {
	if u, err := url.Parse(databaseURL); err == nil {
		return u.Redacted()
	}
	return "(unparsable DATABASE_URL)"
}
