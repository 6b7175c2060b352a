package subtensor

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracer makes the spans of the node's calls; OpenTelemetry's no-op one unless the process traces.
var tracer = otel.Tracer("drover.dev/computehorde/subtensor")

// Conn is a JSON-RPC connection to a subtensor node. It is used by one goroutine: calls are made
// one after the other, each bounded by the context's deadline.
type Conn struct {
	ws     *websocket.Conn
	nextID int
}

// Dial opens a websocket to url (ws:// or wss://); maxMessage bounds every answer read.
func Dial(ctx context.Context, url string, maxMessage int64) (*Conn, error) {
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial subtensor node: %w", err)
	}
	ws.SetReadLimit(maxMessage)
	return &Conn{ws: ws}, nil
}

// Close closes the websocket.
func (c *Conn) Close() error { return c.ws.Close() }

type rpcAnswer struct {
	ID     *int            `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// Call sends method with params and returns the result; other messages (stray notifications)
// are skipped. Within a traced piece of work, the call is a client span of it.
func (c *Conn) Call(ctx context.Context, method string, params ...any) (_ json.RawMessage, err error) {
	ctx, span := tracer.Start(ctx, "subtensor "+method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("rpc.system", "jsonrpc"), attribute.String("rpc.method", method)))
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	_ = c.ws.SetWriteDeadline(deadline)
	_ = c.ws.SetReadDeadline(deadline)
	c.nextID++
	id := c.nextID
	if params == nil {
		params = []any{}
	}
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
	if err := c.ws.WriteJSON(req); err != nil {
		return nil, fmt.Errorf("%s: send: %w", method, err)
	}
	for {
		var a rpcAnswer
		if err := c.ws.ReadJSON(&a); err != nil {
			return nil, fmt.Errorf("%s: read: %w", method, err)
		}
		if a.ID == nil || *a.ID != id {
			continue
		}
		if a.Error != nil {
			if len(a.Error.Data) > 0 && string(a.Error.Data) != "null" {
				// A refused transaction says why in data ("Custom error: 7", "Transaction is outdated").
				return nil, fmt.Errorf("%s: node error %d: %.200s: %.200s", method, a.Error.Code, a.Error.Message, a.Error.Data)
			}
			return nil, fmt.Errorf("%s: node error %d: %.200s", method, a.Error.Code, a.Error.Message)
		}
		return a.Result, nil
	}
}

// Head is a block: its number and hash (0x and 64 hex digits).
type Head struct {
	Number int64
	Hash   string
}

// FinalizedHead asks for the finalized head's hash, then its header for the number.
func (c *Conn) FinalizedHead(ctx context.Context) (Head, error) {
	raw, err := c.Call(ctx, "chain_getFinalizedHead")
	if err != nil {
		return Head{}, err
	}
	var hash string
	if err := json.Unmarshal(raw, &hash); err != nil || !isHash(hash) {
		return Head{}, fmt.Errorf("chain_getFinalizedHead: %.80s is not a block hash", raw)
	}
	raw, err = c.Call(ctx, "chain_getHeader", hash)
	if err != nil {
		return Head{}, err
	}
	var header struct {
		Number string `json:"number"`
	}
	if err := json.Unmarshal(raw, &header); err != nil {
		return Head{}, fmt.Errorf("chain_getHeader %s: %w", hash, err)
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(header.Number, "0x"), 16, 64)
	if err != nil || !strings.HasPrefix(header.Number, "0x") || n < 0 {
		return Head{}, fmt.Errorf("chain_getHeader %s: number %q is not 0x-hex", hash, header.Number)
	}
	return Head{Number: n, Hash: strings.ToLower(hash)}, nil
}

// NeuronsLite calls NeuronInfoRuntimeApi_get_neurons_lite for netuid at block hash and decodes
// at most maxEntries neurons.
func (c *Conn) NeuronsLite(ctx context.Context, netuid uint16, hash string, maxEntries int) ([]Neuron, error) {
	arg := "0x" + hex.EncodeToString([]byte{byte(netuid), byte(netuid >> 8)})
	raw, err := c.Call(ctx, "state_call", "NeuronInfoRuntimeApi_get_neurons_lite", arg, hash)
	if err != nil {
		return nil, err
	}
	var out string
	if err := json.Unmarshal(raw, &out); err != nil || !strings.HasPrefix(out, "0x") {
		return nil, errors.New("state_call: the answer is not a 0x-hex string")
	}
	b, err := hex.DecodeString(out[2:])
	if err != nil {
		return nil, fmt.Errorf("state_call: %w", err)
	}
	return DecodeNeuronsLite(b, maxEntries)
}

func isHash(s string) bool {
	if len(s) != 66 || !strings.HasPrefix(s, "0x") {
		return false
	}
	_, err := hex.DecodeString(s[2:])
	return err == nil
}
