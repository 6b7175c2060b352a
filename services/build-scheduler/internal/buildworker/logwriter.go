package buildworker

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	"drover.dev/services/build-scheduler/internal/logstore"
)

// flushEvery and flushSize bound how stale and how large a stored chunk gets: a follower sees
// output within a quarter second, and a chatty build does not write a row per line.
const (
	flushEvery = 250 * time.Millisecond
	flushSize  = 32 << 10
)

// logWriter buffers one attempt's stdout and stderr and appends them to the store in chunks.
// Appending never blocks the build on the store for long and never fails it: a chunk that cannot
// be stored is dropped and the log marked incomplete.
type logWriter struct {
	ctx     context.Context
	store   logstore.Store
	jobID   int64
	attempt int

	mu         sync.Mutex
	buf        map[string]*bytes.Buffer
	incomplete bool
	started    bool // the flushing goroutine runs: from the first output on
	done       chan struct{}
	flushed    chan struct{}
}

func newLogWriter(ctx context.Context, store logstore.Store, jobID int64, attempt int) *logWriter {
	w := &logWriter{ctx: ctx, store: store, jobID: jobID, attempt: attempt,
		buf: map[string]*bytes.Buffer{}, done: make(chan struct{}), flushed: make(chan struct{})}
	return w
}

// Stream returns a writer for one stream (stdout or stderr).
func (w *logWriter) Stream(name string) io.Writer { return streamWriter{w, name} }

type streamWriter struct {
	w    *logWriter
	name string
}

func (s streamWriter) Write(p []byte) (int, error) {
	s.w.mu.Lock()
	if !s.w.started { // a build that prints nothing costs no goroutine and no ticker
		s.w.started = true
		go s.w.loop()
	}
	b, ok := s.w.buf[s.name]
	if !ok {
		b = &bytes.Buffer{}
		s.w.buf[s.name] = b
	}
	b.Write(p)
	full := b.Len() >= flushSize
	s.w.mu.Unlock()
	if full {
		s.w.flush()
	}
	return len(p), nil
}

func (w *logWriter) loop() {
	defer close(w.flushed)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case <-w.done:
			w.flush()
			return
		case <-tick.C:
			w.flush()
		}
	}
}

// flush appends what is buffered. Holding the lock across the append keeps chunks in order.
func (w *logWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, name := range []string{"stdout", "stderr"} {
		b := w.buf[name]
		if b == nil || b.Len() == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 5*time.Second)
		if err := w.store.Append(ctx, w.jobID, w.attempt, name, bytes.Clone(b.Bytes())); err != nil {
			w.incomplete = true
		}
		cancel()
		b.Reset()
	}
}

// Close flushes the rest and reports whether any chunk was lost.
func (w *logWriter) Close() bool {
	close(w.done)
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if started {
		<-w.flushed
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.incomplete
}
