package batch

import (
	"context"
	"fmt"

	"drover.dev/services/batch-runner/internal/sysevent"
)

// assignJobs turns manifests into jobs: the final count per miner and class after caps, taken
// from the pregenerated pool, with any shortfall generated now.
func (r *run) assignJobs(context.Context) error {
	for _, m := range r.miners {
		for _, e := range m.manifest {
			if e.Count <= 0 {
				continue
			}
			if _, known := r.cfg.spinUp(e.Class); !known {
				r.events.Add(sysevent.TypeExecutorClipped, sysevent.Warning, "unknown executor class skipped",
					map[string]any{"miner_hotkey": m.Hotkey, "executor_class": e.Class, "count": e.Count})
				continue
			}
			if r.cfg.Generators.For(e.Class) == nil {
				r.events.Add(sysevent.TypeExecutorClipped, sysevent.NoSuitableGenerator, "no job this executor class can run: skipped",
					map[string]any{"miner_hotkey": m.Hotkey, "executor_class": e.Class, "count": e.Count})
				continue
			}
			n := e.Count
			if limit, ok := r.cfg.ClassCaps[e.Class]; ok && n > limit {
				r.events.Add(sysevent.TypeExecutorClipped, sysevent.Warning, "executor count clipped to the class cap",
					map[string]any{"miner_hotkey": m.Hotkey, "executor_class": e.Class, "count": e.Count, "cap": limit})
				n = limit
			}
			if err := r.addJobs(m, e.Class, n); err != nil {
				return err
			}
			r.res.Manifests = append(r.res.Manifests, ManifestEntry{Miner: m.Hotkey, Class: e.Class, Declared: e.Count, Tested: n})
		}
	}
	shuffle(r.cfg.Rand, r.jobs)
	r.prog.executors.Store(int64(len(r.jobs)))
	return nil
}

func (r *run) addJobs(m *miner, class string, n int) error {
	specs, err := r.plan.Jobs.Take(r.cfg.Generators, Pair{m.Hotkey, class}, n, r.cfg.Rand)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, spec := range specs {
		uuid, err := newUUID(r.cfg.Rand)
		if err != nil {
			return fmt.Errorf("job for %s/%s: %w", m.Hotkey, class, err)
		}
		j := newJob(uuid, m, class, spec)
		m.jobs[uuid] = j
		r.jobs = append(r.jobs, j)
	}
	return nil
}
