package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/api"
	"drover.dev/services/populate-worker/internal/examples"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/services/populate-worker/internal/signing"
	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/config"
	"drover.dev/shared/service"
)

// Config is the populate-worker's configuration, read from POPULATE_WORKER_* environment variables.
type Config struct {
	config.Common
	HTTPAddr string `envconfig:"HTTP_ADDR" default:":8085" desc:"HTTP listen address"`

	wiring.Settings
	TablesFile          string   `envconfig:"TABLES_FILE" desc:"JSON file of computed tables with HTTP function makes, written into the stored definitions at start (a table changed or retired over the API since keeps the API's)"`
	AdminTokens         []string `envconfig:"ADMIN_TOKENS" secret:"true" desc:"bearer tokens of the admin scope, comma separated: they alone may define and retire computed tables (PUT and DELETE /v1/tables/{name}), which API_TOKENS may not; a token listed in both has both scopes"`
	Examples            bool     `envconfig:"EXAMPLES" default:"true" desc:"register the example pipelines and serve their HTTP function"`
	ExamplesFunctionURL string   `envconfig:"EXAMPLES_FUNCTION_URL" desc:"URL of the example energy function; this service's own when empty"`
	ExamplesSeed        bool     `envconfig:"EXAMPLES_SEED" default:"false" desc:"serve POST /v1/examples/seed, which inserts example upstream rows (demo only)"`
	FunctionSecret      []string `envconfig:"FUNCTION_SECRET" secret:"true" desc:"secret shared with the HTTP function makes: every call is signed with it (Drover-Signature header, HMAC-SHA256 of time and body) and the example function refuses unsigned calls; comma separated to sign with several while rotating; a table of TABLES_FILE may name its own variable (function_secret_env); empty: calls go unsigned (a warning at start), which the Python library's serve refuses"`
}

// Check lists every problem of the configuration that can be seen without the network (the
// tables file is read and its tables checked, not against the database); the service refuses to
// start with any (service.Main), and `populate-worker check-config` prints them.
func (c Config) Check() []error {
	var errs []error
	if err := service.CheckListenAddr("POPULATE_WORKER_HTTP_ADDR", c.HTTPAddr); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.Settings.Check()...)
	if pool, need := c.PoolSize(queue.PopulateWorker.EnvPrefix()), c.PoolNeeded(); pool > 0 && int(pool) < need {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_DB_MAX_CONNS %d is too small for POPULATE_WORKER_MAKE_WORKERS %d: "+
			"at least MAKE_WORKERS + %d = %d (a connection held by every make, two listeners and a make's second connection)",
			pool, c.MakeWorkers, wiring.PoolHeadroom, need))
	}
	if slices.Contains(c.AdminTokens, "") {
		errs = append(errs, errors.New("POPULATE_WORKER_ADMIN_TOKENS (or ADMIN_TOKENS): an empty token (two commas, or a trailing one)"))
	}
	if _, err := api.OpenAPI(c.Examples, c.ExamplesSeed); err != nil {
		errs = append(errs, err)
	}
	if reg, err := registry(c, "http://127.0.0.1/examples/functions/energy"); err != nil {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_TABLES_FILE or _EXAMPLES_FUNCTION_URL: %w", err))
	} else if _, _, err := functionKeys(reg, c.FunctionSecret, os.Getenv); err != nil {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_TABLES_FILE: %w", err))
	}
	return errs
}

// registry builds the tables from code (the examples) and from the tables file. ownFunction is
// the URL of this service's example function, used when EXAMPLES_FUNCTION_URL is empty.
func registry(cfg Config, ownFunction string) (*populate.Registry, error) {
	reg := populate.NewRegistry()
	if cfg.Examples {
		url := cfg.ExamplesFunctionURL
		if url == "" {
			url = ownFunction
		}
		if err := examples.Register(reg, url); err != nil {
			return nil, err
		}
	}
	if cfg.TablesFile != "" {
		if err := reg.LoadFile(cfg.TablesFile); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// functionKeys says which secrets sign the calls to each function make: those in the variable a
// table's function_secret_env names, else FUNCTION_SECRET (service). It lists the function tables
// whose calls go unsigned (neither is set), and fails when a table's variable is unset or two
// tables call one URL with different secrets. The keys follow reg: a table defined or changed
// over the API while the service runs is signed as its definition says.
func functionKeys(reg *populate.Registry, service []string, getenv func(string) string) (signing.Keys, []string, error) {
	byURL, unsigned, err := secretsByURL(reg.All(), service, getenv)
	var mu sync.Mutex
	version := reg.Version()
	keys := func(req *http.Request) []string {
		mu.Lock()
		defer mu.Unlock()
		if v := reg.Version(); v != version {
			version = v // read before the tables, so that a change made meanwhile is seen next time
			byURL, _, _ = secretsByURL(reg.All(), service, getenv)
		}
		if s, ok := byURL[req.URL.String()]; ok {
			return s
		}
		return service
	}
	return keys, unsigned, err
}

// secretsByURL is functionKeys over tables: the secrets of each function URL, the unsigned
// tables and the problems.
func secretsByURL(tables []*populate.Table, service []string, getenv func(string) string) (map[string][]string, []string, error) {
	byURL := map[string][]string{}
	var unsigned []string
	var errs []error
	for _, t := range tables {
		if t.FunctionURL == "" {
			continue
		}
		secrets := service
		if t.FunctionSecretEnv != "" {
			secrets = splitSecrets(getenv(t.FunctionSecretEnv))
			if len(secrets) == 0 {
				errs = append(errs, fmt.Errorf("table %s: %s, its function_secret_env, is not set", t.Name, t.FunctionSecretEnv))
				continue
			}
		}
		if len(secrets) == 0 {
			unsigned = append(unsigned, t.Name)
		}
		u, err := url.Parse(t.FunctionURL)
		if err != nil {
			errs = append(errs, fmt.Errorf("table %s: function_url: %w", t.Name, err))
			continue
		}
		if prev, ok := byURL[u.String()]; ok && !slices.Equal(prev, secrets) {
			errs = append(errs, fmt.Errorf("table %s: function_url %s is another table's, with another secret", t.Name, t.FunctionURL))
		}
		byURL[u.String()] = secrets
	}
	return byURL, unsigned, errors.Join(errs...)
}

// splitSecrets reads a comma-separated list of secrets, as FUNCTION_SECRET is read.
func splitSecrets(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
