package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ticksPerSecond is Linux's USER_HZ, the unit of /proc's CPU times.
const ticksPerSecond = 100

// cpuSample is the CPU time used so far, in ticks: by the whole machine, by the scheduler's and
// workers' processes (with the builds they waited for), by this bench (with the floor's
// commands), and by Postgres when it runs here (its postmaster and every backend). The rest of
// the machine's is other work's.
type cpuSample struct {
	machine, fleet, bench, postgres float64
}

// cpuNow samples the CPU time of the machine, of the processes pids, of this process and of
// the Postgres whose postmaster is postmaster (0: not on this machine).
func cpuNow(pids []int, postmaster int) cpuSample {
	s := cpuSample{machine: machineBusy(), bench: processTicks(os.Getpid())}
	for _, pid := range pids {
		s.fleet += processTicks(pid)
	}
	if postmaster > 0 {
		s.postgres = processTicks(postmaster) + childrenTicks(postmaster)
	}
	return s
}

// childrenTicks is the CPU time of the running children of pid.
func childrenTicks(parent int) float64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var t float64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(parent) {
			t += processTicks(pid)
		}
	}
	return t
}

// postmasterPID is the process id of the database server's postmaster when it runs on this
// machine under a role that may read its data directory, else 0.
func postmasterPID(ctx context.Context, pool *pgxpool.Pool) int {
	var file string
	if err := pool.QueryRow(ctx, `SELECT pg_read_file('postmaster.pid')`).Scan(&file); err != nil {
		return 0
	}
	first, _, _ := strings.Cut(file, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return 0 // another machine's, or another container's
	}
	return pid
}

// machineBusy is the CPU time all cores spent on anything but idling, from /proc/stat.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are counted in user already
			continue
		}
		busy += n
	}
	return busy
}

// processTicks is a process's user and system time, with its waited-for children's.
func processTicks(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(b), ") ") // the command name may hold spaces
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	var t float64
	for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime (fields 14–17)
		if i < len(f) {
			n, _ := strconv.ParseFloat(f[i], 64)
			t += n
		}
	}
	return t
}

// cpuUse is the CPU time spent between two samples.
type cpuUse struct {
	machine, fleet, bench, postgres time.Duration
}

func (s cpuSample) since(before cpuSample) cpuUse {
	d := func(a, b float64) time.Duration {
		return time.Duration((a - b) / ticksPerSecond * float64(time.Second))
	}
	return cpuUse{machine: d(s.machine, before.machine), fleet: d(s.fleet, before.fleet), bench: d(s.bench, before.bench),
		postgres: d(s.postgres, before.postgres)}
}

// perJob says how much CPU a job cost: the machine's, and of it the fleet's, the bench's,
// Postgres's and the rest (other work on the machine).
func (u cpuUse) perJob(jobs int) string {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(jobs) }
	rest := u.machine - u.fleet - u.bench - u.postgres
	return fmt.Sprintf("CPU a job %.2f ms: scheduler and workers %.2f, bench and floor %.2f, Postgres %.2f, other work %.2f",
		ms(u.machine), ms(u.fleet), ms(u.bench), ms(u.postgres), ms(rest))
}
