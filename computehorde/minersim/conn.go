package minersim

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/recvstamp"
)

// maxPending bounds the frames queued before auth completes, so a validator that never
// authenticates cannot grow a miner's memory without limit.
const maxPending = 1024

// conn is one validator's connection to a miner. The handler goroutine reads; writeLoop is
// the only goroutine that writes to the socket; job goroutines hand it frames through out.
type conn struct {
	m         *miner
	cfg       *Config
	ws        *websocket.Conn
	validator string

	ctx        context.Context
	cancel     context.CancelFunc
	out        chan outFrame
	writerDone chan struct{}
	stopRead   chan struct{} // closed when a behaviour stops reading the socket
	stopOnce   sync.Once

	// Owned by the reader goroutine.
	authed  bool
	pending []pendingFrame
	jobs    map[string]*job

	// jobsWG counts job goroutines (spin-up, answer); run waits for them before it returns.
	jobsWG sync.WaitGroup
}

type pendingFrame struct {
	msg  protocol.Message
	size int
	at   int64
	raw  []byte
}

func newConn(m *miner, ws *websocket.Conn, validator string) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		m: m, cfg: &m.fleet.cfg, ws: ws, validator: validator,
		ctx: ctx, cancel: cancel,
		out:        make(chan outFrame, 64),
		writerDone: make(chan struct{}),
		stopRead:   make(chan struct{}),
		jobs:       map[string]*job{},
	}
}

// run serves the connection until either side ends it, then releases the executors its jobs
// still held.
func (c *conn) run() {
	c.ws.SetReadLimit(int64(c.cfg.MaxFrameSize))
	c.ws.SetPingHandler(func(data string) error {
		c.extendDeadline()
		c.tryEnqueue(outFrame{kind: outPong, data: []byte(data)})
		return nil
	})
	c.ws.SetPongHandler(func(string) error { c.extendDeadline(); return nil })
	c.ws.SetCloseHandler(func(code int, _ string) error {
		c.tryEnqueue(outFrame{kind: outClose, code: code})
		return nil
	})
	go c.writeLoop()
	if details := c.m.fleet.validators.authorize(c.validator); details != "" {
		c.refuse(details)
	} else {
		c.readLoop()
	}
	c.cancel()
	c.ws.Close()
	<-c.writerDone
	c.jobsWG.Wait()
	for _, j := range c.jobs {
		j.releaseSlot()
	}
}

// receivedAt is when the frame just read reached this machine, in unix ns: the kernel's receive
// stamp of the socket read that brought its last byte where there is one (see recvstamp), so an
// arrival is what the network delivered, not when this reader got a core; else now.
func (c *conn) receivedAt() int64 {
	if sc, ok := c.ws.NetConn().(*recvstamp.Conn); ok && !sc.LastRead().IsZero() {
		return sc.LastRead().UnixNano()
	}
	return time.Now().UnixNano()
}

func (c *conn) extendDeadline() {
	_ = c.ws.SetReadDeadline(time.Now().Add(c.cfg.IdleTimeout))
}

func (c *conn) readLoop() {
	for {
		c.extendDeadline()
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			c.m.fleet.cfg.Logger.Debug("miner read", "miner", c.m.info.Index, "validator", c.validator, "err", err)
			return
		}
		at := c.receivedAt()
		c.m.frames.Add(1)
		if c.handleFrame(data, at) {
			return
		}
		select {
		case <-c.stopRead:
			select { // stop reading: wait for the end without touching the socket
			case <-c.ctx.Done():
			case <-c.writerDone:
			}
			return
		default:
		}
	}
}

// handleFrame decodes and handles one frame; it reports whether the connection must end.
func (c *conn) handleFrame(data []byte, at int64) bool {
	msg, err := c.m.decoder.DecodeFromValidator(data)
	if err != nil {
		c.malformed(data, at, err)
		return false
	}
	if c.authed {
		c.dispatch(pendingFrame{msg: msg, size: len(data), at: at, raw: data})
		return false
	}
	auth, ok := msg.(*protocol.ValidatorAuthForMiner)
	if !ok {
		if len(c.pending) < maxPending {
			c.pending = append(c.pending, pendingFrame{msg: msg, size: len(data), at: at, raw: data})
		}
		return false
	}
	c.record(pendingFrame{msg: auth, size: len(data), at: at, raw: data}, "", "")
	return !c.authenticate(auth)
}

func (c *conn) malformed(data []byte, at int64, err error) {
	c.m.decodeErrors.Add(1)
	a := c.arrival(len(data), at, data)
	a.DecodeError = err.Error()
	var de *protocol.DecodeError
	reply := &protocol.GenericError{}
	if errors.As(err, &de) {
		a.MessageType = de.MessageType
		reply = de.GenericErrorReply()
	} else {
		details := "Malformed message: " + err.Error()
		reply.Details = &details
	}
	c.m.fleet.recorder.add(a)
	c.send(reply)
}

func (c *conn) arrival(size int, at int64, raw []byte) Arrival {
	a := Arrival{
		Miner: c.m.info.Index, MinerHotkey: c.m.info.Hotkey, Validator: c.validator,
		UnixNano: at, Bytes: size,
	}
	if c.cfg.KeepFrames {
		a.Frame = string(raw)
	}
	return a
}

func (c *conn) record(p pendingFrame, jobUUID, executor string) {
	a := c.arrival(p.size, p.at, p.raw)
	a.MessageType, a.JobUUID, a.Executor = p.msg.MessageType(), jobUUID, executor
	c.m.fleet.recorder.add(a)
}
