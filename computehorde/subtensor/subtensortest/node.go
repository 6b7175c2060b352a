package subtensortest

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Node is a fake subtensor node: it answers each JSON-RPC request whose method and params were
// recorded with the recorded result, and anything else with a JSON-RPC error, the way bittensor
// tests its own client against replayed chain answers.
type Node struct {
	srv *httptest.Server

	mu       sync.Mutex
	answers  map[string]json.RawMessage // method + params JSON → result
	handlers map[string]Handler         // method → answer computed from the params
	delay    time.Duration
	calls    []string
}

// NewNode starts a fake node, closed when t ends.
func NewNode(t testing.TB) *Node {
	t.Helper()
	n := &Node{answers: map[string]json.RawMessage{}, handlers: map[string]Handler{}}
	n.srv = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(n.srv.Close)
	return n
}

// URL is the node's ws:// address.
func (n *Node) URL() string { return "ws" + strings.TrimPrefix(n.srv.URL, "http") }

// Record makes the node answer method with params by result (marshalled to JSON).
func (n *Node) Record(method string, params []any, result any) {
	raw, err := json.Marshal(result)
	if err != nil {
		panic(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.answers[requestKey(method, params)] = raw
}

// RecordChain records a finalized head at block number with hash, and neurons for netuid there.
func (n *Node) RecordChain(number int64, hash string, netuid uint16, neurons []byte) {
	n.Record("chain_getFinalizedHead", []any{}, hash)
	n.Record("chain_getHeader", []any{hash}, map[string]any{"number": "0x" + strings.TrimLeft(hex.EncodeToString(bigEndian(number)), "0"), "parentHash": hash})
	arg := "0x" + hex.EncodeToString([]byte{byte(netuid), byte(netuid >> 8)})
	n.Record("state_call", []any{"NeuronInfoRuntimeApi_get_neurons_lite", arg, hash}, "0x"+hex.EncodeToString(neurons))
}

// Handler computes the answer to a method from its params; an error is answered as a JSON-RPC
// error: an *RPCError as it is, any other with code 1010 and its text.
type Handler func(params []any) (any, error)

// RPCError is a JSON-RPC error as a node answers it, e.g. an invalid transaction: code 1010,
// message "Invalid Transaction", data "Custom error: 7".
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return e.Message + ": " + e.Data }

// Handle makes the node answer method by h whenever no answer to its exact params is recorded:
// for calls whose params cannot be known in advance, such as author_submitExtrinsic of a freshly
// signed extrinsic.
func (n *Node) Handle(method string, h Handler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handlers[method] = h
}

// SetDelay makes every answer wait d.
func (n *Node) SetDelay(d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.delay = d
}

// Calls lists the methods called so far.
func (n *Node) Calls() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.calls...)
}

func (n *Node) serve(w http.ResponseWriter, r *http.Request) {
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	for {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params []any           `json:"params"`
		}
		if err := ws.ReadJSON(&req); err != nil {
			return
		}
		n.mu.Lock()
		result, ok := n.answers[requestKey(req.Method, req.Params)]
		handler := n.handlers[req.Method]
		delay := n.delay
		n.calls = append(n.calls, req.Method)
		n.mu.Unlock()
		time.Sleep(delay)
		answer := map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}
		switch {
		case ok:
		case handler != nil:
			if v, err := handler(req.Params); err != nil {
				var rpcErr *RPCError
				if !errors.As(err, &rpcErr) {
					rpcErr = &RPCError{Code: 1010, Message: err.Error()}
				}
				answer = map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": rpcErr}
			} else {
				answer["result"] = v
			}
		default:
			answer = map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "not recorded: " + req.Method}}
		}
		if err := ws.WriteJSON(answer); err != nil {
			return
		}
	}
}

func requestKey(method string, params []any) string {
	if params == nil {
		params = []any{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		panic(err)
	}
	return method + " " + string(p)
}

func bigEndian(v int64) []byte {
	b := make([]byte, 8)
	for i := range 8 {
		b[7-i] = byte(v >> (8 * i))
	}
	return b
}
