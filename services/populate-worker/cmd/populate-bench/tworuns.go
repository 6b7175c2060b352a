package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"drover.dev/services/populate-worker/internal/populate"
)

// runsTarget is the most two populate runs over the same keys should take, as a share of one
// run's time: DataJoint's promise that more callers go faster, with some room for the keys the
// two runs contend for.
const runsTarget = 0.6

// runWaitPoll is how often a populate run's end is looked for (Engine.WaitRun).
const runWaitPoll = 10 * time.Millisecond

// twoRuns measures one populate run making every key of the slow table alone, then, on fresh
// keys, two runs started together over the same keys, and prints the ratio of their times.
func (b *e2e) twoRuns(ctx context.Context) error {
	fmt.Fprintf(b.out, "two populate runs (DataJoint's \"more callers go faster\"): %d keys, each make %s, reserve_jobs, processes 1 each,\n",
		b.o.runsKeys, b.o.runsMake)
	fmt.Fprintf(b.out, "  through the service's River workers (MAKE_WORKERS %d, the feeder off as FEED_OFF), keys scheduled before the clock starts, a fresh database each\n",
		b.o.runsWorkers)
	one, err := b.populateRuns(ctx, 1)
	if err != nil {
		return fmt.Errorf("one populate run: %w", err)
	}
	two, err := b.populateRuns(ctx, 2)
	if err != nil {
		return fmt.Errorf("two populate runs: %w", err)
	}
	fmt.Fprintf(b.out, "  one run:  %6.2f s  %s\n", one.took.Seconds(), describeRuns(one.runs))
	fmt.Fprintf(b.out, "  two runs: %6.2f s  %s\n", two.took.Seconds(), describeRuns(two.runs))
	ratio := two.took.Seconds() / one.took.Seconds()
	bothMake := two.runs[0].SuccessCount > 0 && two.runs[1].SuccessCount > 0
	fmt.Fprintf(b.out, "  ratio two/one %.1f %%  target <= %.0f %% and both runs make keys (%s): %s\n",
		100*ratio, 100*runsTarget, map[bool]string{true: "they do", false: "they do not"}[bothMake], okOrBelow(ratio <= runsTarget && bothMake))
	return errors.Join(b.check("one run", one), b.check("two runs", two))
}

// runsResult is populate runs started together over the same keys, once all have ended.
type runsResult struct {
	runs []populate.Run
	took time.Duration // from their start to the last one's end
	made *makeCounts
}

// describeRuns lists each run's counts, and their success_count sum when there are several.
func describeRuns(runs []populate.Run) string {
	parts := make([]string, len(runs))
	var sum int64
	for i, r := range runs {
		parts[i] = fmt.Sprintf("run %d: %s, success_count %d, made_elsewhere %d", i+1, r.State, r.SuccessCount, r.MadeElsewhere)
		if r.Skipped+r.Errors+r.Dropped > 0 {
			parts[i] += fmt.Sprintf(", skipped %d, errors %d, dropped %d", r.Skipped, r.Errors, r.Dropped)
		}
		sum += r.SuccessCount
	}
	s := strings.Join(parts, "; ")
	if len(runs) > 1 {
		s += fmt.Sprintf("; success_count sum %d", sum)
	}
	return s
}

// check fails unless the runs' success counts add up to every key and make was called once for
// each: every key made once, by one of the runs.
func (b *e2e) check(what string, res runsResult) error {
	var sum int64
	for _, r := range res.runs {
		sum += r.SuccessCount
	}
	var err error
	if sum != int64(b.o.runsKeys) {
		err = fmt.Errorf("%s: success_count sum %d, want %d", what, sum, b.o.runsKeys)
	}
	if merr := res.made.check(b.o.runsKeys); merr != nil {
		err = errors.Join(err, fmt.Errorf("%s: %w", what, merr))
	}
	return err
}

// populateRuns starts n populate runs together over the same o.runsKeys scheduled keys of the
// slow table, on a fresh database with the feeder off, and returns them once all have ended.
func (b *e2e) populateRuns(ctx context.Context, n int) (runsResult, error) {
	res := runsResult{made: &makeCounts{}}
	db, err := b.scratch.fresh(ctx, 0, b.o.runsKeys)
	if err != nil {
		return res, err
	}
	defer db.drop(ctx)
	var engine *populate.Engine
	s := b.with(b.o.runsWorkers, true)
	svc, err := startWorker(ctx, db.url, s, wireMakes(ctx, benchTables(res.made, b.o.runsMake), s, &engine))
	if err != nil {
		return res, err
	}
	// Scheduled as DataJoint's populate(reserve_jobs=True) finds its keys after schedule_jobs;
	// their feed job waits in a queue nobody works, so that only the runs make them.
	_, err = engine.ScheduleJobs(ctx, slowTable, populate.ScheduleOpts{})
	if err == nil {
		res.runs, res.took, err = startRuns(ctx, engine, n)
	}
	return res, errors.Join(err, svc.stop())
}

// startRuns starts n populate runs of the slow table at once and waits for all of them to end.
func startRuns(ctx context.Context, engine *populate.Engine, n int) ([]populate.Run, time.Duration, error) {
	runs := make([]populate.Run, n)
	start := make(chan struct{})
	g, gctx := errgroup.WithContext(ctx)
	for i := range runs {
		g.Go(func() error {
			<-start
			r, err := engine.Populate(gctx, slowTable, populate.Opts{ReserveJobs: true, SkipSchedule: true, Processes: 1})
			if err != nil {
				return err
			}
			wait, cancel := context.WithTimeout(gctx, measureTimeout)
			defer cancel()
			if runs[i], err = engine.WaitRun(wait, r.ID, runWaitPoll); err == nil && runs[i].State == populate.RunRunning {
				err = fmt.Errorf("populate run %d still running after %s", r.ID, measureTimeout)
			}
			return err
		})
	}
	t0 := time.Now()
	close(start)
	err := g.Wait()
	return runs, time.Since(t0), err
}
