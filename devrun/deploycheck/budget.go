package deploycheck

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"drover.dev/shared/config"
)

// Conns is one workload's share of a deployment's connection budget.
type Conns struct {
	Workload  Workload
	Processes int // processes at once: replicas, plus the surge pods of a rolling update
	Each      int // connections each opens at most: its pool and River's listener
}

// Budget is the most connections a deployment's workloads open at once in Postgres: every
// service's processes (replicas plus, in Kubernetes, each Deployment's maxSurge pods: a rolling
// update of every Deployment at once), each holding its pool and River's listener, plus the
// migrations running meanwhile (one at a time holds MigrateConns, the others wait for its lock
// on one connection each).
type Budget struct {
	Source     string
	Services   []Conns
	Migrations int // migrate workloads started together
	Total      int
}

// ConnectionBudget adds up the budget of the workloads of source ("compose" or "kubernetes").
func ConnectionBudget(ws []Workload, source string) Budget {
	b := Budget{Source: source}
	for _, w := range ws {
		if w.Source != source {
			continue
		}
		if w.Binary == "migrate" {
			b.Migrations++
			continue
		}
		c := Conns{Workload: w, Processes: max(w.Replicas, 1) + w.Surge, Each: processConns(w)}
		b.Services = append(b.Services, c)
		b.Total += c.Processes * c.Each
	}
	b.Total += config.MigrationsConns(b.Migrations)
	return b
}

// processConns is what one process of w opens at most: its pool (PREFIX_DB_MAX_CONNS, or
// DB_MAX_CONNS, or its share of the budget) and River's listener.
func processConns(w Workload) int {
	prefix := strings.ToUpper(strings.ReplaceAll(w.Binary, "-", "_"))
	var c config.Common
	for _, name := range []string{prefix + "_DB_MAX_CONNS", "DB_MAX_CONNS"} {
		if n, err := strconv.ParseInt(w.Env[name], 10, 32); err == nil {
			c.DBMaxConns = int32(n)
			break
		}
	}
	return int(c.ProcessConns(prefix))
}

// Problem says why the budget does not fit a default Postgres (config.UsableConns), or "".
func (b Budget) Problem() string {
	if b.Total <= config.UsableConns {
		return ""
	}
	return fmt.Sprintf("%s opens up to %d Postgres connections at once, more than a default Postgres lets in (%d): %s",
		b.Source, b.Total, config.UsableConns, b)
}

// String lists each workload's part: processes × connections each, and the migrations'.
func (b Budget) String() string {
	parts := make([]string, 0, len(b.Services)+1)
	for _, c := range b.Services {
		parts = append(parts, fmt.Sprintf("%s %d×%d", c.Workload.Name, c.Processes, c.Each))
	}
	if b.Migrations > 0 {
		parts = append(parts, fmt.Sprintf("%d migration(s) %d", b.Migrations, config.MigrationsConns(b.Migrations)))
	}
	return strings.Join(parts, " + ") + fmt.Sprintf(" = %d", b.Total)
}

// surge is a Deployment's maxSurge as a number of pods: an integer, or a percentage of replicas
// rounded up, as Kubernetes counts it; 25 % when unset, none for the Recreate strategy.
func surge(spec map[string]any, replicas int) int {
	strategy, _ := spec["strategy"].(map[string]any)
	if scalar(strategy["type"]) == "Recreate" {
		return 0
	}
	rolling, _ := strategy["rollingUpdate"].(map[string]any)
	v := scalar(rolling["maxSurge"])
	if v == "" {
		v = "25%"
	}
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		p, _ := strconv.Atoi(pct)
		return int(math.Ceil(float64(replicas) * float64(p) / 100))
	}
	n, _ := strconv.Atoi(v)
	return n
}

// replicas is a count field (spec.replicas, deploy.replicas, parallelism): 1 when unset.
func replicas(v any) int {
	if n, err := strconv.Atoi(scalar(v)); err == nil {
		return n
	}
	return 1
}
