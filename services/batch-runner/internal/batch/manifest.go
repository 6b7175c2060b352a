package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"drover.dev/computehorde/protocol"
	"drover.dev/services/batch-runner/internal/minerconn"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// collectManifests connects to every miner at once, in a random order, authenticates and waits
// for the manifest, each within ManifestTimeout. Connections stay open for the rest of the batch:
// one connection per miner carries all its jobs, tagged by job_uuid, as upstream does.
func (r *run) collectManifests(ctx context.Context) error {
	order := append([]Miner(nil), r.plan.Miners...)
	shuffle(r.cfg.Rand, order)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for _, mi := range order {
		m := newMiner(mi, r.events, r.prog)
		wg.Go(func() {
			defer m.recoverPanic("manifest")
			ok := r.manifestOf(ctx, m)
			r.prog.manifest(ok)
			if ok {
				mu.Lock()
				r.miners = append(r.miners, m)
				mu.Unlock()
			} else if m.conn != nil {
				m.conn.Close()
			}
		})
	}
	wg.Wait()
	shuffle(r.cfg.Rand, r.miners)
	return nil
}

// manifestOf reports whether the miner gave a manifest we can use, recording an event otherwise.
func (r *run) manifestOf(ctx context.Context, m *miner) bool {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ManifestTimeout)
	defer cancel()
	url := protocol.ValidatorInterfaceURL(m.IP, m.Port, r.cfg.Key.Address())
	conn, err := r.dial(ctx, url, m)
	if err != nil {
		sub := sysevent.MinerConnectionError
		if errors.Is(err, context.DeadlineExceeded) {
			sub = sysevent.ManifestTimeout
		}
		r.events.Add(sysevent.TypeJobFailure, sub, "connect: "+err.Error(), map[string]string{"miner_hotkey": m.Hotkey})
		return false
	}
	m.conn = conn
	m.send(protocol.NewValidatorAuth(r.cfg.Key, m.Hotkey, time.Now()), nil)
	select {
	case <-m.gotManifest:
	case <-ctx.Done():
		r.events.Add(sysevent.TypeJobFailure, sysevent.ManifestTimeout, "no manifest in time", map[string]any{"miner_hotkey": m.Hotkey, "timeout": r.cfg.ManifestTimeout.String()})
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.unauthorized:
		return false // event recorded when the refusal arrived
	case m.manifest == nil:
		r.events.Add(sysevent.TypeJobFailure, sysevent.ManifestError, fmt.Sprint("connection ended before the manifest: ", m.closedErr),
			map[string]string{"miner_hotkey": m.Hotkey})
		return false
	}
	return true
}

// dial connects, retrying a refused connection a few times within ctx as upstream did.
func (r *run) dial(ctx context.Context, url string, m *miner) (*minerconn.Conn, error) {
	opts := minerconn.Options{
		MaxFrameSize: r.cfg.MaxFrameSize, WriteTimeout: r.cfg.WriteTimeout,
		HandshakeTimeout: r.cfg.ManifestTimeout, ReadTimeout: r.cfg.ManifestTimeout + time.Second,
	}
	var err error
	for attempt := range 4 {
		var conn *minerconn.Conn
		if conn, err = minerconn.Dial(ctx, url, m, opts); err == nil {
			return conn, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return nil, err
}
