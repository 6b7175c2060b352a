package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"drover.dev/migrations"
)

// scratch is a migrated template database holding the tables of the figures that run the
// service, and the databases cloned from it: a fresh one per measurement, so that no job, row or
// dead tuple of one measurement is in the next one's way.
type scratch struct {
	serverURL string
	admin     *pgx.Conn // on the server's maintenance database: creates and drops
	template  string
	clones    int
}

// scratchTables are the tables of the end-to-end figures, in the service's schema: e2e_src →
// e2e_dst for the no-op make, slow_src → slow_dst for the two-runs figure's slow make. Their key
// sources are filled in each clone, with the keys its measurement makes.
const scratchTables = `CREATE TABLE populate_worker.e2e_src (k bigint PRIMARY KEY);
	CREATE TABLE populate_worker.e2e_dst (k bigint PRIMARY KEY, v int NOT NULL);
	CREATE TABLE populate_worker.slow_src (k bigint PRIMARY KEY);
	CREATE TABLE populate_worker.slow_dst (k bigint PRIMARY KEY, v int NOT NULL)`

func newScratch(ctx context.Context, serverURL string) (*scratch, error) {
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redact(serverURL), err)
	}
	s := &scratch{serverURL: serverURL, admin: admin, template: fmt.Sprintf("populate_bench_e2e_%x", rand.Uint32())}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+s.template); err != nil {
		_ = admin.Close(ctx)
		return nil, fmt.Errorf("create database %s: %w", s.template, err)
	}
	if err := migrations.Up(ctx, s.url(s.template), slog.New(slog.DiscardHandler)); err != nil {
		return s, fmt.Errorf("migrate %s: %w", s.template, err)
	}
	conn, err := pgx.Connect(ctx, s.url(s.template))
	if err != nil {
		return s, err
	}
	_, err = conn.Exec(ctx, scratchTables)
	// A template is cloned only while nobody is connected to it.
	return s, errors.Join(err, conn.Close(ctx))
}

func (s *scratch) url(db string) string {
	u, _ := url.Parse(s.serverURL)
	u.Path = "/" + db
	return u.String()
}

// close drops the template.
func (s *scratch) close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx) // dropped on Ctrl-C too
	_, _ = s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+s.template+" WITH (FORCE)")
	_ = s.admin.Close(ctx)
}

// scratchDB is one fresh database and the bench's own connection to it.
type scratchDB struct {
	name, url string
	conn      *pgx.Conn
	s         *scratch
}

// fresh clones a new database from the template, with key sources of e2eKeys and slowKeys keys.
func (s *scratch) fresh(ctx context.Context, e2eKeys, slowKeys int) (*scratchDB, error) {
	s.clones++
	db := &scratchDB{name: fmt.Sprintf("%s_%d", s.template, s.clones), s: s}
	db.url = s.url(db.name)
	if err := s.clone(ctx, db.name); err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		db.drop(ctx)
		return nil, err
	}
	db.conn = conn
	_, err = conn.Exec(ctx, `INSERT INTO populate_worker.e2e_src SELECT generate_series(1, $1::bigint)`, e2eKeys)
	if err == nil {
		_, err = conn.Exec(ctx, `INSERT INTO populate_worker.slow_src SELECT generate_series(1, $1::bigint)`, slowKeys)
	}
	if err == nil {
		_, err = conn.Exec(ctx, `ANALYZE populate_worker.e2e_src, populate_worker.slow_src`)
	}
	if err != nil {
		db.drop(ctx)
		return nil, fmt.Errorf("fill the key sources of %s: %w", db.name, err)
	}
	return db, nil
}

// clone creates db from the template, retrying while a moment's connection to the template (an
// autovacuum worker's) refuses it.
func (s *scratch) clone(ctx context.Context, db string) error {
	for attempt := 1; ; attempt++ {
		_, err := s.admin.Exec(ctx, "CREATE DATABASE "+db+" TEMPLATE "+s.template)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || attempt == 20 {
			if err != nil {
				return fmt.Errorf("create database %s: %w", db, err)
			}
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// drop closes the bench's connection and drops the database.
func (db *scratchDB) drop(ctx context.Context) {
	if db.conn != nil {
		_ = db.conn.Close(ctx)
	}
	_, _ = db.s.admin.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+db.name+" WITH (FORCE)")
}
