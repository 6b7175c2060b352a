package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// CPU time is the fairer comparison on a shared 2-core machine: a measurement's wall clock moves
// with whatever else runs, its CPU time much less. Two sides are counted: this process (the
// service's Go code, River's and pgx's, or River's floor) and the Postgres backends connected to
// the measurement's database (the service's pool and River's listener), when Postgres runs on
// this machine. The bench's own connection, which polls for the end, is left out of the latter.

// cpuSample is CPU time used so far: by this process, and by each backend of one database.
type cpuSample struct {
	process  time.Duration
	backends map[int]time.Duration // by pid; nil when Postgres is not on this machine
}

// cpuUse is the CPU time spent between two samples.
type cpuUse struct {
	process, postgres time.Duration
	local             bool // postgres was measured
}

// sampleCPU samples this process and the backends connected to conn's database but conn.
func sampleCPU(ctx context.Context, conn *pgx.Conn) (cpuSample, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuSample{}, fmt.Errorf("getrusage: %w", err)
	}
	s := cpuSample{process: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	if !postgresIsLocal(conn) {
		return s, nil
	}
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return s, fmt.Errorf("list the backends: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return s, fmt.Errorf("list the backends: %w", err)
	}
	s.backends = map[int]time.Duration{}
	for _, pid := range pids {
		s.backends[int(pid)] = processCPU(int(pid))
	}
	return s, nil
}

// since is the CPU time spent from before to s. A backend that started meanwhile counts whole;
// one that ended meanwhile is lost (the pools keep theirs for the measurement).
func (s cpuSample) since(before cpuSample) cpuUse {
	u := cpuUse{process: s.process - before.process, local: s.backends != nil}
	for pid, t := range s.backends {
		u.postgres += t - before.backends[pid]
	}
	return u
}

// perKey formats u per key, in milliseconds.
func (u cpuUse) perKey(keys int) string {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(keys) }
	if !u.local {
		return fmt.Sprintf("%.2f ms here (Postgres not on this machine)", ms(u.process))
	}
	return fmt.Sprintf("%.2f ms (%.2f here + %.2f Postgres)", ms(u.process+u.postgres), ms(u.process), ms(u.postgres))
}

// total is the CPU time of both sides.
func (u cpuUse) total() time.Duration { return u.process + u.postgres }

// postgresIsLocal says whether conn's backend is a process of this machine named postgres.
func postgresIsLocal(conn *pgx.Conn) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", conn.PgConn().PID()))
	return err == nil && strings.HasPrefix(string(b), "postgres")
}

// ticksPerSecond is Linux's USER_HZ, the unit of /proc's CPU times.
const ticksPerSecond = 100

// processCPU is a process's user and system CPU time, from /proc; zero when it is gone.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(b), ") ") // the command name may hold spaces
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat(5)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}
