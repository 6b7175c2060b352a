package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"drover.dev/migrations/dbsqlc"
	"drover.dev/queue"
)

//go:embed sql
var files embed.FS

// lockKey is the advisory lock every migration run holds, so that two runs at once (two replicas
// starting, compose and a developer) apply each migration once.
const lockKey = 0x64726f766572 // "drover"

// queries are the statements of query.sql, compiled by sqlc; each takes the DBTX to run on.
var queries = dbsqlc.New()

// track is one goose migration sequence within a schema.
type track struct {
	name  string // "common" or the schema name
	table string // the goose version table, schema-qualified
	files fs.FS
}

// tracks returns the goose tracks of svc's schema: common first, then the service's own files
// when it has any.
func tracks(svc queue.Service) ([]track, error) {
	schema := svc.Schema()
	out := []track{}
	for _, name := range []string{"common", schema} {
		sub, err := fs.Sub(files, "sql/"+name)
		if err != nil {
			return nil, fmt.Errorf("migrations of %s: %w", name, err)
		}
		if entries, err := fs.ReadDir(sub, "."); err != nil || len(entries) == 0 {
			continue
		}
		table := schema + ".goose_" + name + "_version"
		if name == schema {
			table = schema + ".goose_version"
		}
		out = append(out, track{name: name, table: table, files: sub})
	}
	return out, nil
}

// Up applies every pending migration to every service schema and creates every unit's role with
// its grants, leaving passwords as they are.
func Up(ctx context.Context, databaseURL string, logger *slog.Logger) error {
	return UpFor(ctx, databaseURL, Units, nil, logger)
}

// UpFor migrates what the given units need: the schema each works (its River tables, the common
// tables and its own), and each unit's login role, whose password it sets when passwords (by unit
// name) holds one. Then every existing role gets its rights on the objects that exist, so units
// may be migrated one by one in any order (one migration job per service).
func UpFor(ctx context.Context, databaseURL string, units []Unit, passwords map[string]string, logger *slog.Logger) error {
	return withLock(ctx, databaseURL, func(pool *pgxpool.Pool) error {
		for _, svc := range queue.Services {
			if !slices.ContainsFunc(units, func(u Unit) bool { return u.Home == svc }) {
				continue
			}
			if err := upService(ctx, pool, databaseURL, svc, logger); err != nil {
				return err
			}
		}
		for _, u := range units {
			if err := ensureRole(ctx, pool, u, passwords[u.Name]); err != nil {
				return err
			}
			logger.InfoContext(ctx, "role ready", "unit", u.Name, "role", u.Role(), "password_set", passwords[u.Name] != "")
		}
		if err := grantAll(ctx, pool); err != nil {
			return fmt.Errorf("grant the roles their rights: %w", err)
		}
		return nil
	})
}

func upService(ctx context.Context, pool *pgxpool.Pool, databaseURL string, svc queue.Service, logger *slog.Logger) error {
	schema := svc.Schema()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	migrator, err := riverMigrator(pool, svc, logger)
	if err != nil {
		return err
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("river migrations in %s: %w", schema, err)
	}
	for _, v := range res.Versions {
		logger.InfoContext(ctx, "applied river migration", "schema", schema, "version", v.Version, "name", v.Name)
	}
	return eachProvider(databaseURL, svc, func(tr track, p *goose.Provider) error {
		results, err := p.Up(ctx)
		if err != nil {
			return fmt.Errorf("%s migrations in %s: %w", tr.name, schema, err)
		}
		for _, r := range results {
			logger.InfoContext(ctx, "applied migration", "schema", schema, "track", tr.name, "version", r.Source.Version, "file", r.Source.Path)
		}
		return nil
	})
}

func riverMigrator(pool *pgxpool.Pool, svc queue.Service, logger *slog.Logger) (*rivermigrate.Migrator[pgx.Tx], error) {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: svc.Schema(), Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("river migrator for %s: %w", svc, err)
	}
	return migrator, nil
}

// eachProvider calls fn with a goose provider for each track of svc, on a database handle whose
// search_path is the service's schema.
func eachProvider(databaseURL string, svc queue.Service, fn func(track, *goose.Provider) error) error {
	trs, err := tracks(svc)
	if err != nil {
		return err
	}
	db, err := openSchemaDB(databaseURL, svc.Schema())
	if err != nil {
		return err
	}
	defer db.Close()
	for _, tr := range trs {
		p, err := goose.NewProvider(goose.DialectPostgres, db, tr.files, goose.WithTableName(tr.table))
		if err != nil {
			return fmt.Errorf("goose provider %s in %s: %w", tr.name, svc.Schema(), err)
		}
		if err := fn(tr, p); err != nil {
			return err
		}
	}
	return nil
}

func openSchemaDB(databaseURL, schema string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	cfg.RuntimeParams["search_path"] = schema
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(1)
	return db, nil
}

// withLock runs fn holding the migration advisory lock on a pool of its own.
func withLock(ctx context.Context, databaseURL string, fn func(*pgxpool.Pool) error) (err error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	// One connection holds the lock, one migrates River and grants; goose's handle is the third.
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Release()
	if err := queries.MigrationLockAcquire(ctx, conn, lockKey); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		err = errors.Join(err, queries.MigrationLockRelease(context.WithoutCancel(ctx), conn, lockKey))
	}()
	return fn(pool)
}
