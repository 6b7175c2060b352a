package queue

import (
	"errors"
	"fmt"
	"strings"
)

// Service names one of Drover's deployable services. Its River tables and its own tables live in
// the Postgres schema Schema returns.
type Service string

// The five services. Names are what users type (in URLs, probe targets and env prefixes); schemas
// derive from them.
const (
	MinerSync      Service = "miner-sync"
	BatchRunner    Service = "batch-runner"
	Scorer         Service = "scorer"
	BuildScheduler Service = "build-scheduler"
	PopulateWorker Service = "populate-worker"
)

// Services lists every service in a stable order.
var Services = []Service{MinerSync, BatchRunner, Scorer, BuildScheduler, PopulateWorker}

// ErrUnknownService is returned by ParseService for a name that is not one of Services.
var ErrUnknownService = errors.New("unknown service")

// ParseService returns the service with the given name.
func ParseService(name string) (Service, error) {
	for _, s := range Services {
		if string(s) == name {
			return s, nil
		}
	}
	return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownService, name, ServiceNames())
}

// ServiceNames returns the names of all services, comma separated, for messages.
func ServiceNames() string {
	names := make([]string, len(Services))
	for i, s := range Services {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Schema is the Postgres schema holding the service's tables and its River tables.
func (s Service) Schema() string { return strings.ReplaceAll(string(s), "-", "_") }

// EnvPrefix is the prefix of the service's environment variables, e.g. BATCH_RUNNER.
func (s Service) EnvPrefix() string { return strings.ToUpper(s.Schema()) }
