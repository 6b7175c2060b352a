package minersim

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/recvstamp"
)

// MinerStats counts what one miner saw. DecodeErrors counts frames protocol.DecodeFromValidator
// refused: for an honest validator it must stay zero.
type MinerStats struct {
	Index         int    `json:"index"`
	Hotkey        string `json:"hotkey"`
	Connections   int64  `json:"connections"`
	AuthFailures  int64  `json:"auth_failures"`
	Frames        int64  `json:"frames"`
	DecodeErrors  int64  `json:"decode_errors"`
	BusyExecutors int    `json:"busy_executors"`
}

// miner is one simulated miner: a listener, its executors' slots and its open connections.
type miner struct {
	fleet   *Fleet
	info    MinerInfo
	key     *hotkey.Keypair
	decoder protocol.Decoder
	server  *http.Server

	connections, authFailures, frames, decodeErrors atomic.Int64

	mu    sync.Mutex
	slots map[string][]bool // busy flags per executor class
	conns map[*conn]struct{}
	wg    sync.WaitGroup
}

func newMiner(f *Fleet, info MinerInfo, key *hotkey.Keypair) *miner {
	m := &miner{
		fleet: f, info: info, key: key,
		decoder: protocol.Decoder{MaxFrameSize: f.cfg.MaxFrameSize},
		slots:   map[string][]bool{},
		conns:   map[*conn]struct{}{},
	}
	for _, e := range f.cfg.Manifest {
		m.slots[e.Class] = make([]bool, e.Count)
	}
	return m
}

// upgrader shares one write buffer pool across the fleet: at thousands of mostly idle
// connections, per-connection write buffers would dominate memory.
var upgrader = websocket.Upgrader{
	WriteBufferPool: &sync.Pool{},
	CheckOrigin:     func(*http.Request) bool { return true },
}

func (m *miner) serve(l net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v0.1/validator_interface/{validator}", m.handleValidator)
	m.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.server.Serve(recvstamp.Listener{Listener: l}) }()
}

func (m *miner) handleValidator(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the HTTP request.
	}
	c := newConn(m, ws, r.PathValue("validator"))
	if !m.track(c) {
		ws.Close()
		return
	}
	defer m.untrack(c)
	m.connections.Add(1)
	c.run()
}

func (m *miner) track(c *conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns == nil {
		return false // closing
	}
	m.conns[c] = struct{}{}
	m.wg.Add(1)
	return true
}

func (m *miner) untrack(c *conn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.mu.Unlock()
	m.wg.Done()
}

func (m *miner) close() error {
	var err error
	if m.server != nil {
		err = m.server.Close()
	}
	m.mu.Lock()
	conns := m.conns
	m.conns = nil
	m.mu.Unlock()
	for c := range conns {
		c.abort()
	}
	m.wg.Wait()
	return err
}

// reserve takes the lowest free executor slot of a class, or returns -1 when all are busy or
// the miner has no such class.
func (m *miner) reserve(class string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, busy := range m.slots[class] {
		if !busy {
			m.slots[class][i] = true
			return i
		}
	}
	return -1
}

func (m *miner) release(class string, slot int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.slots[class]; slot >= 0 && slot < len(s) {
		s[slot] = false
	}
}

func (m *miner) stats() MinerStats {
	busy := 0
	m.mu.Lock()
	for _, slots := range m.slots {
		for _, b := range slots {
			if b {
				busy++
			}
		}
	}
	m.mu.Unlock()
	return MinerStats{
		Index: m.info.Index, Hotkey: m.info.Hotkey, Connections: m.connections.Load(),
		AuthFailures: m.authFailures.Load(), Frames: m.frames.Load(), DecodeErrors: m.decodeErrors.Load(),
		BusyExecutors: busy,
	}
}
