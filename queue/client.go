package queue

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// FetchCooldown is the least time between two fetches of one queue's producer that insert
// notifications trigger. River's default (100 ms) delays a job inserted less than that after the
// notification of the job being worked, as a same-service hop is: it waited up to 100 ms where a
// job from another service, arriving at an idle producer, was fetched at once.
const FetchCooldown = 20 * time.Millisecond

// Client is the River client every service uses: pgx transactions on Postgres.
type Client = river.Client[pgx.Tx]

// ClientConfig is what a service decides about its own River client. Everything else (the schema,
// the driver, defaults that must hold everywhere) is fixed by NewClient.
type ClientConfig struct {
	// ID identifies this process among the service's replicas. River's default (host name and
	// start time) is used when empty.
	ID string

	// Queues maps each queue the service works to its number of worker goroutines.
	Queues map[string]int

	// Workers holds one worker per job kind the service consumes.
	Workers *river.Workers

	// PeriodicJobs are enqueued by whichever replica of the service is River's leader.
	PeriodicJobs []*river.PeriodicJob

	// JobTimeout bounds one job's run time; River's default of a minute applies when zero.
	JobTimeout time.Duration

	// RescueStuckJobsAfter is how long a running job must have run before River's rescuer (on the
	// leader, every 30 s) looks at it; it then takes back the jobs that have also outlived their
	// kind's own Timeout, because the process that held them died. It must be at least
	// JobTimeout. Zero means JobTimeout (or River's default job timeout, a minute), not River's
	// hour: a killed process's job is back within its kind's timeout plus 30 s as long as that
	// timeout is at least this long, so a service sets it to its shortest kind's timeout.
	RescueStuckJobsAfter time.Duration

	// Logger receives River's own logs.
	Logger *slog.Logger

	// Fetch is how eagerly the client fetches new jobs; zero fields keep FetchCooldown and
	// River's poll interval (1 s).
	Fetch Fetch

	// Process is the liveness of the process the client runs in (NewProcess): its middleware
	// lets the process stop the jobs a sweep gave back. Its ID is the client's when ID is empty.
	Process *Process
}

// Fetch is how eagerly a River client looks for jobs. A producer fetches when told of an insert
// (LISTEN/NOTIFY), when a slot frees after a full fetch, and every PollInterval, but never twice
// within Cooldown, and at most as many jobs as it has free slots: a Cooldown caps a producer at
// its slots' worth of jobs per Cooldown.
type Fetch struct {
	Cooldown     time.Duration
	PollInterval time.Duration
}

// NewClient returns a River client for service svc bound to the service's own schema, so that
// it is the only leader there and its maintenance (rescue, cleaning, periodic jobs) touches only
// its own jobs.
func NewClient(pool *pgxpool.Pool, svc Service, cfg ClientConfig) (*Client, error) {
	queues := make(map[string]river.QueueConfig, len(cfg.Queues))
	for name, n := range cfg.Queues {
		queues[name] = river.QueueConfig{MaxWorkers: n}
	}
	middleware := traceMiddleware()
	if cfg.Process != nil {
		cfg.ID = cmp.Or(cfg.ID, cfg.Process.ID())
		middleware = append(middleware, cfg.Process.Middleware())
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:                   cfg.ID,
		Middleware:           middleware,
		Schema:               svc.Schema(),
		Queues:               queues,
		Workers:              cfg.Workers,
		PeriodicJobs:         cfg.PeriodicJobs,
		JobTimeout:           cfg.JobTimeout,
		RescueStuckJobsAfter: rescueAfter(cfg),
		Logger:               cfg.Logger,
		FetchOnlyKnownKinds:  true,
		FetchCooldown:        cmp.Or(cfg.Fetch.Cooldown, FetchCooldown),
		FetchPollInterval:    cfg.Fetch.PollInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("river client for %s: %w", svc, err)
	}
	return client, nil
}

// rescueAfter is cfg's RescueStuckJobsAfter with its default.
func rescueAfter(cfg ClientConfig) time.Duration {
	switch {
	case cfg.RescueStuckJobsAfter > 0:
		return cfg.RescueStuckJobsAfter
	case cfg.JobTimeout > 0:
		return cfg.JobTimeout
	}
	return river.JobTimeoutDefault
}

// NewInserter returns an insert-only River client bound to service svc's schema. A producer uses
// it to call InsertTx on its own transaction, so that its state change and the job that another
// service must work commit together or not at all. An inserter never works or fetches jobs and
// never takes part in leader election.
//
// Its insert notifications are limited to one per queue per millisecond (River's minimum), not
// River's default of one per FetchCooldown (100 ms): a notification the limiter drops is lost for
// good, and the job waits for the consumer's next poll (1 s). That is what a same-service hop hit
// every time, since the job it follows was notified by the same inserter a few milliseconds
// before; bursts across services hit it too. The cost is a pg_notify per inserting transaction.
func NewInserter(pool *pgxpool.Pool, svc Service) (*Client, error) {
	return newInserter(pool, svc, river.FetchCooldownMin)
}

// NewQuietInserter is NewInserter for a producer that announces its inserts itself, after they
// commit (NotifyInserted, Announcer): River's own notification, sent inside the inserting
// transaction, goes out for a queue's first insert and then at most once an hour
// (quietCooldown). NotifyInserted says why a busy producer wants that: a notification inside a
// transaction holds the lock every notifying commit needs through that transaction's WAL flush.
func NewQuietInserter(pool *pgxpool.Pool, svc Service) (*Client, error) {
	return newInserter(pool, svc, quietCooldown)
}

// quietCooldown is how often a quiet inserter notifies inside its transaction: River's limiter
// cannot be switched off, only made rare.
const quietCooldown = time.Hour

// newInserter is an inserter notifying of its inserts into a queue at most once per
// notifyCooldown (River's FetchCooldown, the insert-notification limiter's window).
func newInserter(pool *pgxpool.Pool, svc Service, notifyCooldown time.Duration) (*Client, error) {
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Middleware:          traceMiddleware(),
		Schema:              svc.Schema(),
		SkipUnknownJobCheck: true,
		FetchCooldown:       notifyCooldown,
		FetchPollInterval:   max(notifyCooldown, river.FetchPollIntervalDefault), // at least FetchCooldown, River checks
	})
	if err != nil {
		return nil, fmt.Errorf("river inserter for %s: %w", svc, err)
	}
	return client, nil
}

// Inserters holds one insert-only client per service, keyed by service.
type Inserters map[Service]*Client

// NewInserters returns an insert-only client for every service.
func NewInserters(pool *pgxpool.Pool) (Inserters, error) {
	ins := make(Inserters, len(Services))
	for _, svc := range Services {
		c, err := NewInserter(pool, svc)
		if err != nil {
			return nil, err
		}
		ins[svc] = c
	}
	return ins, nil
}
