package minerconn

import (
	"sync"
	"sync/atomic"
	"time"
)

// Burst writes the prepared frames of many connections at one release from a few goroutines,
// each looping over its share of the connections as a bare write loop does, rather than from
// one writer goroutine per connection woken by the gate. Waking a goroutine per connection
// costs each connection a scheduler switch, a select, a deadline change and the bookkeeping of
// its result before the next connection's write starts; at 500 connections on one core that was
// a few milliseconds of send spread.
//
// Each connection's writer still owns its socket: it parks on its part of the burst (and calls
// armed), and the burst writes for it only while it is parked there. A burst write never blocks:
// it is one non-blocking system call that writes what the socket buffer takes, and the writer
// writes the rest itself under the write deadline (counted from the burst write's start), so a
// miner that stops reading still delays nobody but itself. Where the burst cannot write a
// connection (its writer had not parked when the burst reached it, or the socket is not a plain
// TCP socket: TLS, or a platform without the non-blocking write) the writer writes once the
// gate is open, as SendAt does.
//
// The zero value is an empty burst.
type Burst struct {
	mu    sync.Mutex
	sends []*burstSend
}

// burstSend is one connection's frames in a burst.
type burstSend struct {
	c      *Conn
	frames []byte
	state  atomic.Int32
	result chan burstResult // capacity 1: the burst never waits for the writer
}

// States of a burstSend: the writer moves it from pending to parked, the burst from parked to
// written or from pending to passed; the one that moves it off pending decides who writes.
const (
	burstPending int32 = iota // the writer has not reached it
	burstParked               // the writer waits for the burst's result
	burstWritten              // the burst writes it and sends the result
	burstPassed               // the burst went past: the writer writes it after the gate
)

// burstResult is how the burst's non-blocking write went: n bytes written between before and
// after.
type burstResult struct {
	n             int
	before, after time.Time
	err           error
}

// SendIn is SendAt with the write made by burst b (see Burst): frames are complete frames (see
// MaskedFrame), written once gate is open, in one system call when the socket buffer takes
// them. armed and done are as for SendAt. Every SendIn of a burst must happen before its Write.
func (c *Conn) SendIn(b *Burst, gate <-chan struct{}, frames []byte, armed func(), done func(SendResult)) {
	s := &burstSend{c: c, frames: frames, result: make(chan burstResult, 1)}
	b.mu.Lock()
	b.sends = append(b.sends, s)
	b.mu.Unlock()
	c.enqueue(write{kind: writeRaw, data: frames, gate: gate, armed: armed, done: done, burst: s})
}

// Write writes part k of parts of the burst: every parts-th connection from the k-th, in the
// order of their SendIn. Call it once the gate is open, from parts goroutines (k = 0…parts-1),
// or as Write(0, 1) from one.
func (b *Burst) Write(k, parts int) {
	b.mu.Lock()
	sends := b.sends
	b.mu.Unlock()
	var written []*burstSend
	results := make([]burstResult, 0, (len(sends)+parts-1)/parts)
	for i := k; i < len(sends); i += parts {
		s := sends[i]
		if !s.claim() {
			continue
		}
		before := time.Now()
		n, err := s.c.tryWrite(s.frames)
		written, results = append(written, s), append(results, burstResult{n: n, before: before, after: time.Now(), err: err})
	}
	// The writers learn their results only now: a writer woken during the loop would compete
	// with it for the core, and could take the processor while the loop is in a write system
	// call (the runtime hands a P on to other work when a system call takes long).
	for i, s := range written {
		s.result <- results[i]
	}
}

// claim reports whether the burst writes s: yes when its writer is parked, and no, for good,
// when the writer has not reached it yet or gave up waiting (the connection closed).
func (s *burstSend) claim() bool {
	for {
		switch s.state.Load() {
		case burstParked:
			if s.state.CompareAndSwap(burstParked, burstWritten) {
				return true
			}
		case burstPending:
			if s.state.CompareAndSwap(burstPending, burstPassed) {
				return false
			}
		default:
			return false
		}
	}
}

// parkInBurst is the writer's side of a burst write: it parks on the burst's result when the
// burst can write this socket and has not gone past it, and returns false when the writer must
// write itself.
func (c *Conn) parkInBurst(w write) (SendResult, bool) {
	if c.raw == nil {
		return SendResult{}, false
	}
	// The burst's write must not meet an earlier write's deadline, long past; it cannot block,
	// and the rest of it gets a deadline of its own in finishBurst.
	_ = c.ws.NetConn().SetWriteDeadline(time.Time{})
	if !w.burst.state.CompareAndSwap(burstPending, burstParked) {
		return SendResult{}, false
	}
	if w.armed != nil {
		w.armed()
	}
	select {
	case r := <-w.burst.result:
		return c.finishBurst(w.data, r), true
	case <-c.stop:
		// Closed before the burst came: nothing was written. Once the burst has claimed the
		// write, though, its result comes at once (its write never blocks) and is the send's,
		// even when the miner hung up right after reading it.
		if w.burst.state.CompareAndSwap(burstParked, burstPassed) {
			return SendResult{Err: ErrClosed}, true
		}
		return c.finishBurst(w.data, <-w.burst.result), true
	}
}

// finishBurst writes what the burst's write left of data, under the write deadline counted from
// the burst write's start.
func (c *Conn) finishBurst(data []byte, r burstResult) SendResult {
	if r.err != nil || r.n == len(data) {
		return SendResult{Before: r.before, After: r.after, Err: r.err}
	}
	nc := c.ws.NetConn()
	_ = nc.SetWriteDeadline(r.before.Add(c.opts.WriteTimeout))
	_, err := nc.Write(data[r.n:])
	return SendResult{Before: r.before, After: time.Now(), Err: err}
}
