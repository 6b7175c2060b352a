package migrations

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/queue"
)

// A Unit is one thing deployed on its own with its own database role: each of the five services,
// and build-worker, which works build-scheduler's schema.
type Unit struct {
	Name string        // what users type: migrate up NAME
	Home queue.Service // the service whose schema the unit works
	// Owner units own their schema's data: every right on its tables, sequences and functions,
	// and CREATE in it. build-worker only reads and writes the rows of its home schema.
	Owner bool
}

// BuildWorker is build-scheduler's worker process, deployed on its own.
const BuildWorker = "build-worker"

// Units lists every unit, in the order migrate up works them.
var Units = []Unit{
	{Name: string(queue.MinerSync), Home: queue.MinerSync, Owner: true},
	{Name: string(queue.BatchRunner), Home: queue.BatchRunner, Owner: true},
	{Name: string(queue.Scorer), Home: queue.Scorer, Owner: true},
	{Name: string(queue.BuildScheduler), Home: queue.BuildScheduler, Owner: true},
	{Name: BuildWorker, Home: queue.BuildScheduler},
	{Name: string(queue.PopulateWorker), Home: queue.PopulateWorker, Owner: true},
}

// grantsVersion changes whenever grants changes what it grants, so that Fingerprint tells a
// database granted the old way (a test template) apart.
const grantsVersion = 2

// crossReads are the tables of other schemas a unit reads (never writes), by unit name.
var crossReads = map[string][]string{
	string(queue.BatchRunner): {"miner_sync.miners"}, // phase 1 reads the miners to test
}

// ParseUnit returns the unit with the given name.
func ParseUnit(name string) (Unit, error) {
	for _, u := range Units {
		if u.Name == name {
			return u, nil
		}
	}
	names := make([]string, len(Units))
	for i, u := range Units {
		names[i] = u.Name
	}
	return Unit{}, fmt.Errorf("%w %q (known: %s)", queue.ErrUnknownService, name, strings.Join(names, ", "))
}

// Role is the Postgres role the unit connects as: drover_ and its name with underscores.
func (u Unit) Role() string { return "drover_" + strings.ReplaceAll(u.Name, "-", "_") }

// PasswordEnv is the variable migrate up reads the role's password from, e.g.
// DROVER_DB_PASSWORD_BATCH_RUNNER. Unset, the password is left as it is.
func (u Unit) PasswordEnv() string {
	return "DROVER_DB_PASSWORD_" + strings.ToUpper(strings.ReplaceAll(u.Name, "-", "_"))
}

// ensureRole creates the unit's login role when it does not exist, and sets its password when
// one is given. Roles belong to the cluster, not the database, so two migrations of two databases
// may create the same role at once: the loser's duplicate error means the role is there.
func ensureRole(ctx context.Context, pool *pgxpool.Pool, u Unit, password string) error {
	role := pgx.Identifier{u.Role()}.Sanitize()
	canLogin, err := queries.RoleCanLogin(ctx, pool, u.Role())
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := pool.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil && !isDuplicate(err) {
			return fmt.Errorf("create role %s (the migrating user needs CREATEROLE, or create it beforehand): %w", u.Role(), err)
		}
	case err != nil:
		return fmt.Errorf("look up role %s: %w", u.Role(), err)
	case !canLogin:
		if _, err := pool.Exec(ctx, "ALTER ROLE "+role+" LOGIN"); err != nil {
			return fmt.Errorf("let role %s log in: %w", u.Role(), err)
		}
	}
	if password == "" {
		return nil
	}
	if strings.ContainsRune(password, 0) {
		return fmt.Errorf("%s holds a NUL byte", u.PasswordEnv())
	}
	if _, err := pool.Exec(ctx, "ALTER ROLE "+role+" PASSWORD "+quoteLiteral(password)); err != nil {
		return fmt.Errorf("set the password of role %s: %w", u.Role(), err)
	}
	return nil
}

// isDuplicate reports a role created meanwhile by another session: duplicate_object, or the
// unique violation of pg_authid's name index when both inserted at once.
func isDuplicate(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42710" || pgErr.Code == "23505")
}

// quoteLiteral quotes s as an SQL string literal (standard_conforming_strings, Postgres's default
// and pgx's requirement). ALTER ROLE takes no bind parameters.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// grantAll gives every unit whose role exists its rights on the objects that exist now. It runs
// after every migration, whole or of one unit, so the order in which units migrate does not
// matter: whichever runs last completes the grants. Grants only add; nothing is revoked.
func grantAll(ctx context.Context, pool *pgxpool.Pool) error {
	for _, u := range Units {
		exists, err := queries.RoleExists(ctx, pool, u.Role())
		if err != nil {
			return fmt.Errorf("look up role %s: %w", u.Role(), err)
		}
		if !exists {
			continue
		}
		stmts, err := grants(ctx, pool, u)
		if err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := pool.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
	}
	return nil
}

// grants returns the GRANT statements of unit u on the objects that exist:
//   - its home schema: owners get every right on its tables, sequences and functions and CREATE;
//     build-worker reads and writes its rows;
//   - every other schema's River job table: what River's insert needs (INSERT, SELECT for its
//     RETURNING, UPDATE of kind for the unique insert's ON CONFLICT, the id sequence), because a
//     probe may target any service and its acknowledgement goes back to the origin's queue, and
//     batch-runner enqueues score_batch for scorer;
//   - its cross-reads, read-only.
func grants(ctx context.Context, pool *pgxpool.Pool, u Unit) ([]string, error) {
	role := pgx.Identifier{u.Role()}.Sanitize()
	var out []string
	home := pgx.Identifier{u.Home.Schema()}.Sanitize()
	ok, err := queries.SchemaExists(ctx, pool, u.Home.Schema())
	if err != nil {
		return nil, fmt.Errorf("look up schema %s: %w", u.Home.Schema(), err)
	}
	if ok {
		if u.Owner {
			out = append(out,
				"GRANT USAGE, CREATE ON SCHEMA "+home+" TO "+role,
				"GRANT ALL ON ALL TABLES IN SCHEMA "+home+" TO "+role,
				"GRANT ALL ON ALL SEQUENCES IN SCHEMA "+home+" TO "+role,
			)
		} else {
			out = append(out,
				"GRANT USAGE ON SCHEMA "+home+" TO "+role,
				"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+home+" TO "+role,
				"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA "+home+" TO "+role,
			)
			// Elected River leader, it reindexes river_job's indexes daily, which takes MAINTAIN
			// (Postgres 17; before, only the owner may, and the reindexer logs an error).
			version, err := queries.ServerVersionNum(ctx, pool)
			if err != nil {
				return nil, fmt.Errorf("server version: %w", err)
			}
			if version >= 170000 {
				out = append(out, "GRANT MAINTAIN ON "+pgx.Identifier{u.Home.Schema(), "river_job"}.Sanitize()+" TO "+role)
			}
		}
		out = append(out, "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA "+home+" TO "+role)
	}
	for _, svc := range queue.Services {
		if svc == u.Home {
			continue
		}
		ok, err := queries.TableExists(ctx, pool, svc.Schema()+".river_job")
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		schema := pgx.Identifier{svc.Schema()}.Sanitize()
		job := pgx.Identifier{svc.Schema(), "river_job"}.Sanitize()
		seq := pgx.Identifier{svc.Schema(), "river_job_id_seq"}.Sanitize()
		out = append(out,
			"GRANT USAGE ON SCHEMA "+schema+" TO "+role,
			"GRANT SELECT, INSERT, UPDATE (kind) ON "+job+" TO "+role,
			"GRANT USAGE ON SEQUENCE "+seq+" TO "+role,
		)
	}
	for _, table := range crossReads[u.Name] {
		ok, err := queries.TableExists(ctx, pool, table)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		schema, name, _ := strings.Cut(table, ".")
		out = append(out,
			"GRANT USAGE ON SCHEMA "+pgx.Identifier{schema}.Sanitize()+" TO "+role,
			"GRANT SELECT ON "+pgx.Identifier{schema, name}.Sanitize()+" TO "+role,
		)
	}
	return out, nil
}
