package migrations

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"

	"drover.dev/queue"
)

// TrackStatus is the state of one migration track in one schema.
type TrackStatus struct {
	Schema  string
	Track   string // "river", "common" or the schema name
	Current int64
	Latest  int64
}

// Pending reports whether the track has migrations not yet applied.
func (s TrackStatus) Pending() bool { return s.Current < s.Latest }

// Status reports, for every schema and track, the applied and the latest version.
func Status(ctx context.Context, databaseURL string) ([]TrackStatus, error) {
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()
	var out []TrackStatus
	for _, svc := range queue.Services {
		river, err := riverStatus(ctx, pool, svc)
		if err != nil {
			return nil, err
		}
		out = append(out, river)
		err = eachProvider(databaseURL, svc, func(tr track, p *goose.Provider) error {
			st, err := gooseStatus(ctx, pool, tr, p)
			if err != nil {
				return fmt.Errorf("%s versions in %s: %w", tr.name, svc.Schema(), err)
			}
			st.Schema = svc.Schema()
			out = append(out, st)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// gooseStatus reads a track's versions without creating its version table, which goose would do.
func gooseStatus(ctx context.Context, pool *pgxpool.Pool, tr track, p *goose.Provider) (TrackStatus, error) {
	st := TrackStatus{Track: tr.name}
	sources := p.ListSources()
	if len(sources) > 0 {
		st.Latest = sources[len(sources)-1].Version
	}
	exists, err := tableExists(ctx, pool, tr.table)
	if err != nil || !exists {
		return st, err
	}
	st.Current, err = p.GetDBVersion(ctx)
	return st, err
}

func tableExists(ctx context.Context, pool *pgxpool.Pool, table string) (bool, error) {
	return queries.TableExists(ctx, pool, table)
}

func riverStatus(ctx context.Context, pool *pgxpool.Pool, svc queue.Service) (TrackStatus, error) {
	st := TrackStatus{Schema: svc.Schema(), Track: "river"}
	migrator, err := riverMigrator(pool, svc, slog.New(slog.DiscardHandler))
	if err != nil {
		return st, err
	}
	all := migrator.AllVersions()
	st.Latest = int64(all[len(all)-1].Version)
	exists, err := tableExists(ctx, pool, svc.Schema()+".river_migration")
	if err != nil {
		return st, fmt.Errorf("river status in %s: %w", svc.Schema(), err)
	}
	if !exists {
		return st, nil
	}
	applied, err := migrator.ExistingVersions(ctx)
	if err != nil {
		return st, fmt.Errorf("river status in %s: %w", svc.Schema(), err)
	}
	if len(applied) > 0 {
		st.Current = int64(applied[len(applied)-1].Version)
	}
	return st, nil
}

// DownTo rolls svc's own track back to version (0 undoes all of it). River's and the common
// tracks are left alone: other code in the schema depends on them.
func DownTo(ctx context.Context, databaseURL string, svc queue.Service, version int64, logger *slog.Logger) error {
	return withLock(ctx, databaseURL, func(*pgxpool.Pool) error {
		return eachProvider(databaseURL, svc, func(tr track, p *goose.Provider) error {
			if tr.name != svc.Schema() {
				return nil
			}
			results, err := p.DownTo(ctx, version)
			if err != nil {
				return fmt.Errorf("down to %d in %s: %w", version, svc.Schema(), err)
			}
			for _, r := range results {
				logger.InfoContext(ctx, "rolled back migration", "schema", svc.Schema(), "version", r.Source.Version, "file", r.Source.Path)
			}
			return nil
		})
	})
}
