package batch

import (
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"drover.dev/computehorde/protocol"
	"drover.dev/services/batch-runner/internal/minerconn"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// Miner is one miner a batch tests, as the metagraph lists it.
type Miner struct {
	Hotkey string
	IP     string
	Port   int
}

// miner is a miner's part of a running batch: its connection and its jobs. It is the
// connection's Handler, so everything the miner says lands here, on its reader goroutine.
type miner struct {
	Miner
	events   *sysevent.Recorder
	progress *Progress
	conn     *minerconn.Conn

	mu           sync.Mutex
	manifest     protocol.Manifest
	gotManifest  chan struct{} // closed on the first manifest, or when the miner may not be used
	unauthorized bool
	closedErr    error
	jobs         map[string]*job
}

func newMiner(m Miner, events *sysevent.Recorder, progress *Progress) *miner {
	return &miner{Miner: m, events: events, progress: progress, gotManifest: make(chan struct{}), jobs: map[string]*job{}}
}

// Message implements minerconn.Handler. A panic while handling one miner's frame is recorded and
// ends that miner's connection; it never reaches the batch.
func (m *miner) Message(at time.Time, msg protocol.Message) {
	defer m.recoverPanic("message " + msg.MessageType())
	m.mu.Lock()
	defer m.mu.Unlock()
	switch msg := msg.(type) {
	case *protocol.V0ExecutorManifestRequest:
		m.onManifest(msg)
	case *protocol.UnauthorizedError, *protocol.GenericError:
		m.onError(msg)
	case *protocol.V0MainHotkeyMessage, *protocol.V0VolumesReadyRequest,
		*protocol.V0ExecutionDoneRequest, *protocol.V0MachineSpecsRequest:
		// Progress reports; nothing in a verdict depends on them.
	default:
		m.onJobMessage(at, msg)
	}
}

func (m *miner) onManifest(msg *protocol.V0ExecutorManifestRequest) {
	if m.manifest != nil {
		m.protocolEvent(sysevent.Duplicate, "second manifest ignored", "")
		return
	}
	m.manifest = msg.Manifest
	if m.manifest == nil {
		m.manifest = protocol.Manifest{}
	}
	m.releaseManifestWait()
}

func (m *miner) onError(msg protocol.Message) {
	if protocol.IsUnauthorized(msg) {
		m.unauthorized = true
		m.events.Add(sysevent.TypeJobFailure, sysevent.Unauthorized, "miner refused our validator", m.data(msg))
		m.releaseManifestWait()
		return
	}
	m.events.Add(sysevent.TypeJobFailure, sysevent.GenericError, "miner sent GenericError", m.data(msg))
}

func (m *miner) releaseManifestWait() {
	select {
	case <-m.gotManifest:
	default:
		close(m.gotManifest)
	}
}

// jobUUIDOf returns the job_uuid a miner's job message carries.
func jobUUIDOf(msg protocol.Message) (string, bool) {
	switch msg := msg.(type) {
	case *protocol.V0AcceptJobRequest:
		return msg.JobUUID, true
	case *protocol.V0DeclineJobRequest:
		return msg.JobUUID, true
	case *protocol.V0ExecutorReadyRequest:
		return msg.JobUUID, true
	case *protocol.V0StreamingJobReadyRequest:
		return msg.JobUUID, true
	case *protocol.V0ExecutorFailedRequest:
		return msg.JobUUID, true
	case *protocol.V0StreamingJobNotReadyRequest:
		return msg.JobUUID, true
	case *protocol.V0HordeFailedRequest:
		return msg.JobUUID, true
	case *protocol.V0JobFinishedRequest:
		return msg.JobUUID, true
	case *protocol.V0JobFailedRequest:
		return msg.JobUUID, true
	}
	return "", false
}

func (m *miner) onJobMessage(at time.Time, msg protocol.Message) {
	uuid, ok := jobUUIDOf(msg)
	if !ok {
		m.protocolEvent(sysevent.UnknownJob, "unexpected "+msg.MessageType(), "")
		return
	}
	j, ok := m.jobs[uuid]
	if !ok {
		m.protocolEvent(sysevent.UnknownJob, msg.MessageType()+" for a job_uuid not ours", uuid)
		return
	}
	k, _ := j.slotFor(msg)
	switch j.fill(k, at, msg) {
	case duplicate:
		m.protocolEvent(sysevent.Duplicate, fmt.Sprintf("%s: %s already answered; first message kept", msg.MessageType(), k), uuid)
	case late:
		m.protocolEvent(sysevent.LateMessage, fmt.Sprintf("%s after the %s deadline ignored", msg.MessageType(), k), uuid)
	case filled:
		if k == slotAnswer {
			m.progress.answered(msg)
		}
	}
}

// BadFrame implements minerconn.Handler.
func (m *miner) BadFrame(_ time.Time, err error) {
	m.events.Add(sysevent.TypeProtocol, sysevent.MalformedFrame, "frame not decodable: "+err.Error(), map[string]string{"miner_hotkey": m.Hotkey})
}

// Closed implements minerconn.Handler.
func (m *miner) Closed(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closedErr = err
	m.releaseManifestWait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		m.events.Add(sysevent.TypeJobFailure, sysevent.MinerConnectionError, "connection ended: "+err.Error(), map[string]string{"miner_hotkey": m.Hotkey})
	}
}

func (m *miner) protocolEvent(subtype sysevent.Subtype, description, uuid string) {
	m.events.Add(sysevent.TypeProtocol, subtype, description, map[string]string{"miner_hotkey": m.Hotkey, "job_uuid": uuid})
}

func (m *miner) data(msg protocol.Message) map[string]any {
	return map[string]any{"miner_hotkey": m.Hotkey, "message": msg}
}

// recoverPanic turns a panic in this miner's handling into an event and a closed connection.
func (m *miner) recoverPanic(where string) {
	if v := recover(); v != nil {
		m.events.Add(sysevent.TypeValidatorFailure, sysevent.Panic, fmt.Sprintf("panic handling miner %s (%s): %v", m.Hotkey, where, v),
			map[string]string{"miner_hotkey": m.Hotkey, "stack": string(debug.Stack())})
		if m.conn != nil {
			go m.conn.Close()
		}
	}
}

// send queues a message; a failure is recorded as an event and passed to done.
func (m *miner) send(msg protocol.Message, done func(minerconn.SendResult)) {
	payload, err := protocol.Encode(msg)
	if err != nil {
		m.events.Addf(sysevent.TypeValidatorFailure, sysevent.GenericError, "encode %s: %v", msg.MessageType(), err)
		if done != nil {
			done(minerconn.SendResult{Err: err})
		}
		return
	}
	m.conn.Send(payload, func(r minerconn.SendResult) {
		if r.Err != nil {
			m.events.Add(sysevent.TypeJobFailure, sysevent.MinerSendError, fmt.Sprintf("send %s: %v", msg.MessageType(), r.Err),
				map[string]string{"miner_hotkey": m.Hotkey})
		}
		if done != nil {
			done(r)
		}
	})
}
