package main

import (
	"context"
	"time"
)

// supervise restarts s whenever it exits while the fleet runs, as a process manager (systemd,
// Kubernetes) restarts a replica: a service that crashes or is killed comes back, and its River
// jobs of the dead process are given back by the liveness sweep of the restarted one (or of
// another process on its schema) once the dead one's record is LIVENESS_TIMEOUT old. A process
// that keeps exiting is restarted with a growing pause, up to half a minute.
func (f *fleet) supervise(ctx context.Context, opts options, p *printer, s *service) {
	go func() {
		pause := time.Second
		for {
			var err error
			select {
			case <-f.stopping:
				return
			case <-ctx.Done():
				return
			case err = <-s.exited:
			}
			select {
			case <-f.stopping:
				s.exited <- err // stop waits for it
				return
			case <-ctx.Done():
				s.exited <- err
				return
			case <-time.After(pause):
			}
			if !f.restart(ctx, opts, p, s, err) {
				return
			}
			pause = min(2*pause, 30*time.Second)
		}
	}()
}

// restart starts s again unless the fleet is stopping, and says so; false when it could not.
func (f *fleet) restart(ctx context.Context, opts options, p *printer, s *service, exit error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stopping:
		s.exited <- exit
		return false
	default:
	}
	p.fail("%s exited (%v): restarting it; the River jobs it held come back once its liveness record is LIVENESS_TIMEOUT (30s) old", s.name, exit)
	if err := s.start(ctx, opts, s.binary, s.args, s.extra); err != nil {
		p.fail("restart %s: %v", s.name, err)
		return false
	}
	return true
}
