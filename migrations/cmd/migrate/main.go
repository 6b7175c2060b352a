// Command migrate brings a Drover database up to date, reports its state, or rolls a service's
// own tables back.
//
//	migrate up                      apply everything pending, in every service schema; every role
//	migrate up SERVICE              only what SERVICE needs: its schema and its role
//	migrate status                  applied and latest version per schema and track
//	migrate down-to SERVICE VERSION roll SERVICE's own migrations back to VERSION
//	migrate ping                    exit 0 when the database answers within 3 s
//	migrate check-config            check the environment without connecting (exit 1 naming each problem)
//
// DATABASE_URL names the database; DROVER_DB_PASSWORD_<SERVICE> sets a role's password.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	neturl "net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/migrations"
	"drover.dev/queue"
)

const usage = `usage: migrate up [SERVICE] | status | down-to SERVICE VERSION | ping | check-config

  up            migrate every service schema; create every service's role (drover_miner_sync, ...)
                with its rights
  up SERVICE    migrate only what SERVICE needs (its schema: River's tables, the common tables,
                its own) and create its role; SERVICE is one of
                miner-sync, batch-runner, scorer, build-scheduler, build-worker, populate-worker
  status        applied and latest version per schema and track
  down-to SERVICE VERSION
                roll SERVICE's own migrations back to VERSION
  ping          exit 0 when the database answers within 3 s
  check-config  check the environment without connecting; exit 1 naming each problem

Environment:
  DATABASE_URL  Postgres connection string (required), e.g. postgres://postgres@127.0.0.1:5432/drover;
                its user creates the roles (CREATEROLE) unless they exist
  DROVER_DB_PASSWORD_<SERVICE>
                password up sets on SERVICE's role, e.g. DROVER_DB_PASSWORD_BATCH_RUNNER; unset,
                the password is left as it is
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		for line := range strings.SplitSeq(err.Error(), "\n") { // one problem per line
			fmt.Fprintln(os.Stderr, "migrate:", line)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return errors.New("no command given")
		}
		return nil
	}
	if args[0] == "check-config" {
		if err := checkConfig(getenv); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "migrate: configuration OK")
		return nil
	}
	if err := checkConfig(getenv); err != nil {
		return err
	}
	url := getenv("DATABASE_URL")
	logger := slog.New(slog.NewTextHandler(stdout, nil))
	switch args[0] {
	case "up":
		return up(ctx, url, args[1:], getenv, logger, stdout)
	case "status":
		return printStatus(ctx, url, stdout)
	case "ping":
		return ping(ctx, url)
	case "down-to":
		return downTo(ctx, url, args[1:], logger)
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
}

func up(ctx context.Context, url string, args []string, getenv func(string) string, logger *slog.Logger, stdout io.Writer) error {
	units := migrations.Units
	switch len(args) {
	case 0:
	case 1:
		u, err := migrations.ParseUnit(args[0])
		if err != nil {
			return err
		}
		units = []migrations.Unit{u}
	default:
		return fmt.Errorf("up takes at most one SERVICE\n%s", usage)
	}
	passwords := map[string]string{}
	for _, u := range units {
		if p := getenv(u.PasswordEnv()); p != "" {
			passwords[u.Name] = p
		}
	}
	if err := migrations.UpFor(ctx, url, units, passwords, logger); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "migrations up to date")
	return nil
}

// checkConfig checks the environment every command reads, without connecting: every problem,
// joined.
func checkConfig(getenv func(string) string) error {
	var errs []error
	switch url := getenv("DATABASE_URL"); {
	case url == "":
		errs = append(errs, errors.New("DATABASE_URL is not set"))
	case strings.Contains(url, "$("):
		// Kubernetes leaves $(NAME) as is when NAME is not defined in the container.
		errs = append(errs, fmt.Errorf("DATABASE_URL: a variable reference was never expanded in %q", redact(url)))
	default:
		if _, err := pgx.ParseConfig(url); err != nil {
			errs = append(errs, fmt.Errorf("DATABASE_URL: not a Postgres connection string: %w", err))
		}
	}
	return errors.Join(errs...)
}

// redact hides the password of a URL-form connection string.
func redact(url string) string {
	if u, err := neturl.Parse(url); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

func printStatus(ctx context.Context, url string, stdout io.Writer) error {
	statuses, err := migrations.Status(ctx, url)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-16s %-16s %8s %8s\n", "SCHEMA", "TRACK", "APPLIED", "LATEST")
	for _, s := range statuses {
		mark := ""
		if s.Pending() {
			mark = "  pending"
		}
		fmt.Fprintf(stdout, "%-16s %-16s %8d %8d%s\n", s.Schema, s.Track, s.Current, s.Latest, mark)
	}
	return nil
}

func downTo(ctx context.Context, url string, args []string, logger *slog.Logger) error {
	if len(args) != 2 {
		return fmt.Errorf("down-to takes SERVICE VERSION\n%s", usage)
	}
	svc, err := queue.ParseService(args[0])
	if err != nil {
		return err
	}
	version, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || version < 0 {
		return fmt.Errorf("version %q is not a non-negative integer", args[1])
	}
	return migrations.DownTo(ctx, url, svc, version, logger)
}

func ping(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("database does not answer: %w", err)
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}
