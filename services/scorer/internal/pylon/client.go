// Package pylon is scorer's client of Pylon, the HTTP service a ComputeHorde validator reaches
// the chain through: it reads which uid each hotkey has at the latest block, and schedules a
// weights setting (Pylon chooses between commit-reveal and a plain set_weights from the subnet's
// hyperparameters, signs and submits). Every answer is bounded in size and time.
package pylon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	neturl "net/url"
	"regexp"
	"strings"
	"time"
)

// DefaultMaxBytes bounds a neurons answer: 4,096 neurons of ~600 bytes each fit in 4 MiB.
const DefaultMaxBytes = 8 << 20

// maxAnswer is how much of a weights answer is kept: Pylon answers a short JSON document.
const maxAnswer = 4096

// Client calls one Pylon for one subnet in the name of one identity.
type Client struct {
	BaseURL  string // http(s)://host:port
	Identity string // the identity Pylon signs for (PUT /api/v1/identity/{Identity}/…)
	Token    string // bearer token; never printed
	Netuid   int
	Timeout  time.Duration // each call, body included
	MaxBytes int64         // largest neurons answer read
	HTTP     *http.Client  // a fresh client when nil
}

// Neurons is the subnet at one block: the uid of every registered hotkey.
type Neurons struct {
	Block int64
	Hash  string
	UIDs  map[string]int
	// LastUpdate is each neuron's last_update: the block its weights last changed on chain.
	LastUpdate map[string]int64
	Bad        int // neurons that did not decode, or gave a uid out of range: left out of UIDs
}

// Answer is Pylon's answer to a weights request.
type Answer struct {
	Status int
	Body   string // at most 4 KiB
}

var blockHash = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// Neurons reads the latest block's neurons.
func (c *Client) Neurons(ctx context.Context) (Neurons, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	url := fmt.Sprintf("%s/api/v1/subnet/%d/block/latest/neurons", c.base(), c.Netuid)
	status, body, err := c.do(ctx, http.MethodGet, url, nil, c.MaxBytes)
	if err != nil {
		return Neurons{}, err
	}
	if status != http.StatusOK {
		return Neurons{}, fmt.Errorf("pylon neurons: status %d: %s", status, truncate(string(body), 200))
	}
	return decodeNeurons(body)
}

// SetWeights asks Pylon to set weights (hotkey → weight). A non-2xx answer is returned, not an
// error: the caller records it.
func (c *Client) SetWeights(ctx context.Context, weights map[string]float64) (Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	payload, err := json.Marshal(map[string]any{"weights": weights})
	if err != nil {
		return Answer{}, fmt.Errorf("encode weights: %w", err)
	}
	url := fmt.Sprintf("%s/api/v1/identity/%s/subnet/%d/weights", c.base(), neturl.PathEscape(c.Identity), c.Netuid)
	status, body, err := c.do(ctx, http.MethodPut, url, payload, maxAnswer)
	if errors.Is(err, errTooLarge) {
		err = nil // the answer is kept truncated
	}
	return Answer{Status: status, Body: string(body)}, err
}

var errTooLarge = errors.New("pylon answer too large")

// do sends one request and reads at most limit bytes of the answer; past that it returns what it
// read and errTooLarge.
func (c *Client) do(ctx context.Context, method, url string, payload []byte, limit int64) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, fmt.Errorf("pylon request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	client := c.HTTP
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("pylon %s: %w", method, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("read pylon answer: %w", err)
	}
	if int64(len(body)) > limit {
		return resp.StatusCode, body[:limit], fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	return resp.StatusCode, body, nil
}

func (c *Client) base() string { return strings.TrimRight(c.BaseURL, "/") }

// decodeNeurons keeps each neuron's uid; one that does not decode is counted, not fatal.
func decodeNeurons(body []byte) (Neurons, error) {
	var doc struct {
		Block *struct {
			Number *int64 `json:"number"`
			Hash   string `json:"hash"`
		} `json:"block"`
		Neurons map[string]json.RawMessage `json:"neurons"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Neurons{}, fmt.Errorf("decode pylon neurons: %w", err)
	}
	if doc.Block == nil || doc.Block.Number == nil || doc.Neurons == nil || !blockHash.MatchString(doc.Block.Hash) {
		return Neurons{}, errors.New("decode pylon neurons: block.number, block.hash (0x and 64 hex digits) and neurons are required")
	}
	n := Neurons{
		Block: *doc.Block.Number, Hash: strings.ToLower(doc.Block.Hash),
		UIDs: make(map[string]int, len(doc.Neurons)), LastUpdate: make(map[string]int64, len(doc.Neurons)),
	}
	for key, raw := range doc.Neurons {
		var neuron struct {
			UID        *int64 `json:"uid"`
			Hotkey     string `json:"hotkey"`
			LastUpdate int64  `json:"last_update"`
		}
		if json.Unmarshal(raw, &neuron) != nil || neuron.UID == nil || *neuron.UID < 0 || *neuron.UID > math.MaxUint16 || neuron.Hotkey != key {
			n.Bad++
			continue
		}
		n.UIDs[key] = int(*neuron.UID)
		n.LastUpdate[key] = neuron.LastUpdate
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
