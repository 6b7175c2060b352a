// Package benchdb gives the build scheduler's benchmark commands a scratch database (created on
// the server they are pointed at, migrated, dropped when they end) and the groups they run.
package benchdb

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/migrations"
	"drover.dev/services/build-scheduler/internal/dag"
)

// Server is the server the benchmarks use by default: DATABASE_URL, else the local Postgres.
func Server() string {
	if v := os.Getenv("DATABASE_URL"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/postgres"
}

// Scratch creates a migrated database on server and returns its URL, a pool of at most
// maxConns connections on its build_scheduler schema (tracer, when not nil, sees every
// statement), and a function that closes the pool and drops the database.
func Scratch(ctx context.Context, server string, maxConns int32, tracer pgx.QueryTracer) (*pgxpool.Pool, string, func(), error) {
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return nil, "", nil, fmt.Errorf("connect to %s: %w", server, err)
	}
	name := fmt.Sprintf("drover_bench_%x", rand.Uint32())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		return nil, "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close(context.Background())
	}
	u, err := url.Parse(server)
	if err != nil {
		drop()
		return nil, "", nil, fmt.Errorf("parse %s: %w", server, err)
	}
	u.Path = "/" + name
	if err := migrations.Up(ctx, u.String(), slog.New(slog.DiscardHandler)); err != nil {
		drop()
		return nil, "", nil, fmt.Errorf("migrate %s: %w", name, err)
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = "build_scheduler,public"
	cfg.MaxConns = maxConns
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	return pool, u.String(), func() { pool.Close(); drop() }, nil
}

// Graph is the benchmarks' 10,000-job group of the instant command true on target: one root
// fanning out to 2,999 leaves, 500 diamonds and 250 chains of 20.
func Graph(target string) dag.Submission {
	sub := dag.Submission{Name: "bench"}
	add := func(name string, deps ...string) {
		sub.Jobs = append(sub.Jobs, dag.JobSpec{Name: name, Target: target, Command: []string{"true"}, DependsOn: deps})
	}
	add("root")
	for i := range 2999 {
		add(fmt.Sprint("leaf", i), "root")
	}
	for i := range 500 {
		p := fmt.Sprint("d", i, "-")
		add(p + "top")
		add(p+"left", p+"top")
		add(p+"right", p+"top")
		add(p+"bottom", p+"left", p+"right")
	}
	sub.Jobs = append(sub.Jobs, Chains(target, 250, 20)...)
	return sub
}

// Chains is n chains of depth jobs of the instant command true on target.
func Chains(target string, n, depth int) []dag.JobSpec {
	var jobs []dag.JobSpec
	for i := range n {
		for k := range depth {
			j := dag.JobSpec{Name: fmt.Sprint("c", i, "-", k), Target: target, Command: []string{"true"}}
			if k > 0 {
				j.DependsOn = []string{fmt.Sprint("c", i, "-", k-1)}
			}
			jobs = append(jobs, j)
		}
	}
	return jobs
}
