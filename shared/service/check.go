package service

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/shared/config"
	"drover.dev/shared/logging"
	"drover.dev/shared/web"
)

// Check checks settings (a pointer to a service's Config, already read from the environment)
// without the network: the common settings (Common) when settings embeds them, then the
// service's own (config.Checker). It returns every problem joined (Problems splits them), or nil.
// Main calls it before starting and in check-config mode: both see the same problems.
func Check(envPrefix string, settings any) error {
	var errs []error
	if c, ok := settings.(interface{ CommonConfig() *config.Common }); ok {
		errs = append(errs, CheckCommon(envPrefix, *c.CommonConfig())...)
	}
	if c, ok := settings.(config.Checker); ok {
		errs = append(errs, c.Check()...)
	}
	return errors.Join(errs...)
}

// MinPool is the smallest pool a service works with: River's producers, leader and maintenance
// share it with every request and job, and one connection would serialize them all. River's
// listener is not in it (config.ListenerConns).
const MinPool = 2

// CheckCommon checks the settings every service has: the database URL parses (nothing connects),
// /v1 has tokens unless auth is off, the log level and format exist, the pool is the budget's
// share or a size a service can work with, the timeouts are positive.
func CheckCommon(envPrefix string, c config.Common) []error {
	key := func(name string) string { return fmt.Sprintf("%s_%s (or %s)", envPrefix, name, name) }
	var errs []error
	if c.DatabaseURL != "" { // unset is reported as a missing required variable
		if err := CheckDatabaseURL(c.DatabaseURL); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key("DATABASE_URL"), err))
		}
	}
	if len(c.APITokens) == 0 && !c.AuthDisabled {
		errs = append(errs, fmt.Errorf("%s: %w", key("API_TOKENS"), web.ErrNoTokens))
	}
	for _, t := range c.APITokens {
		if t == "" {
			errs = append(errs, fmt.Errorf("%s: an empty token (two commas, or a trailing one)", key("API_TOKENS")))
			break
		}
	}
	if _, err := logging.New(io.Discard, c.LogLevel, "text"); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", key("LOG_LEVEL"), err))
	}
	if _, err := logging.New(io.Discard, "info", c.LogFormat); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", key("LOG_FORMAT"), err))
	}
	switch pool := c.PoolSize(envPrefix); {
	case c.DBMaxConns < 0:
		errs = append(errs, fmt.Errorf("%s: %d, want 0 (the process's share of the connection budget) or a pool size", key("DB_MAX_CONNS"), c.DBMaxConns))
	case pool == 1:
		errs = append(errs, fmt.Errorf("%s: a pool of 1 would serialize River's fetches, its maintenance, every job and every request (at least %d)", key("DB_MAX_CONNS"), MinPool))
	}
	if c.BodyLimit < 1 {
		errs = append(errs, fmt.Errorf("%s: %d, want at least 1", key("BODY_LIMIT"), c.BodyLimit))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"READ_HEADER_TIMEOUT", c.ReadHeaderTimeout}, {"READ_TIMEOUT", c.ReadTimeout}, {"WRITE_TIMEOUT", c.WriteTimeout},
		{"IDLE_TIMEOUT", c.IdleTimeout}, {"SHUTDOWN_TIMEOUT", c.ShutdownTimeout}, {"SOFT_STOP_TIMEOUT", c.SoftStopTimeout},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s: %s, want a positive duration", key(d.name), d.v))
		}
	}
	return errs
}

// CheckDatabaseURL checks that url is a Postgres connection string, without connecting. A
// Kubernetes variable reference $(NAME) left in it means NAME was not defined in the container.
func CheckDatabaseURL(url string) error {
	if i := strings.Index(url, "$("); i >= 0 {
		ref, _, _ := strings.Cut(url[i:], ")")
		return fmt.Errorf("%s) was never expanded: %s is not set in the container's environment", ref, strings.TrimPrefix(ref, "$("))
	}
	if _, err := pgxpool.ParseConfig(url); err != nil {
		return fmt.Errorf("not a Postgres connection string: %w", err)
	}
	return nil
}

// CheckListenAddr checks an HTTP listen address (host:port, host may be empty) without listening.
func CheckListenAddr(variable, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s: %q is not a listen address (host:port or :port): %w", variable, addr, err)
	}
	return nil
}
