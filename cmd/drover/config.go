package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// services are Drover's services with their make run addresses, the defaults.
var services = []struct{ name, url string }{
	{"miner-sync", "http://127.0.0.1:8081"},
	{"batch-runner", "http://127.0.0.1:8082"},
	{"scorer", "http://127.0.0.1:8083"},
	{"build-scheduler", "http://127.0.0.1:8084"},
	{"populate-worker", "http://127.0.0.1:8085"},
}

// The services drover calls, by name.
const (
	minerSync      = "miner-sync"
	batchRunner    = "batch-runner"
	scorer         = "scorer"
	buildScheduler = "build-scheduler"
	populateWorker = "populate-worker"
)

// fileConfig is the config file:
//
//	token: drover-dev-token
//	admin_token: my-admin-token
//	output: table
//	urls:
//	  scorer: http://scorer.internal:8083
type fileConfig struct {
	Token      string            `yaml:"token"`
	AdminToken string            `yaml:"admin_token"`
	Output     string            `yaml:"output"`
	URLs       map[string]string `yaml:"urls"`
}

// config is what every command uses, resolved from flags, then DROVER_* environment, then the
// config file, then the defaults (make run's).
type config struct {
	token string
	// adminToken is the admin scope's token, which defining and retiring computed tables takes;
	// token when none is given.
	adminToken string
	output     string
	urls       map[string]string
}

// flagValues are the global flags as given; empty when not given.
type flagValues struct {
	config     string
	token      string
	adminToken string
	output     string
	urls       map[string]*string
}

func addGlobalFlags(flags *pflag.FlagSet) *flagValues {
	v := &flagValues{urls: map[string]*string{}}
	flags.StringVar(&v.config, "config", "", "config file (env DROVER_CONFIG; default ~/.config/drover/config.yaml)")
	flags.StringVar(&v.token, "token", "", "API bearer token (env DROVER_TOKEN; default drover-dev-token, make run's)")
	flags.StringVar(&v.adminToken, "admin-token", "", "bearer token of the admin scope, for tables apply and delete (env DROVER_ADMIN_TOKEN; default the token)")
	flags.StringVarP(&v.output, "output", "o", "", "output format: table or json (env DROVER_OUTPUT)")
	for _, s := range services {
		v.urls[s.name] = flags.String(s.name+"-url", "", fmt.Sprintf("%s base URL (env DROVER_%s_URL; default %s)", s.name, envName(s.name), s.url))
	}
	return v
}

func envName(service string) string { return strings.ToUpper(strings.ReplaceAll(service, "-", "_")) }

// resolve builds the config: each value from its flag, its DROVER_* variable, the file, or the
// default, in that order.
func (v *flagValues) resolve(getenv func(string) string) (config, error) {
	path, explicit := cmp.Or(v.config, getenv("DROVER_CONFIG")), true
	if path == "" {
		explicit = false
		if home, err := os.UserConfigDir(); err == nil {
			path = filepath.Join(home, "drover", "config.yaml")
		}
	}
	var file fileConfig
	if path != "" {
		raw, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !explicit:
		case err != nil:
			return config{}, fmt.Errorf("config file: %w", err)
		default:
			if err := yaml.Unmarshal(raw, &file); err != nil {
				return config{}, fmt.Errorf("config file %s: %w", path, err)
			}
		}
	}
	c := config{
		token:  cmp.Or(v.token, getenv("DROVER_TOKEN"), file.Token, "drover-dev-token"),
		output: cmp.Or(v.output, getenv("DROVER_OUTPUT"), file.Output, "table"),
		urls:   map[string]string{},
	}
	c.adminToken = cmp.Or(v.adminToken, getenv("DROVER_ADMIN_TOKEN"), file.AdminToken, c.token)
	if c.output != "table" && c.output != "json" {
		return c, fmt.Errorf("output %q: must be table or json", c.output)
	}
	for name := range file.URLs {
		if !known(name) {
			return c, fmt.Errorf("config file %s: urls: no service %q", path, name)
		}
	}
	for _, s := range services {
		c.urls[s.name] = strings.TrimRight(cmp.Or(*v.urls[s.name], getenv("DROVER_"+envName(s.name)+"_URL"), file.URLs[s.name], s.url), "/")
	}
	return c, nil
}

func known(service string) bool {
	for _, s := range services {
		if s.name == service {
			return true
		}
	}
	return false
}
