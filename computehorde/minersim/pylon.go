package minersim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// PylonBlockTime is how often the stub's latest block advances, as the chain's does.
const PylonBlockTime = 12 * time.Second

// pylonMaxBody bounds a weights request: 4,096 hotkeys of 48 characters and their floats.
const pylonMaxBody = 1 << 20

// Pylon stubs the two endpoints of Pylon (the HTTP service a ComputeHorde validator reaches the
// chain through) that a validator uses: the neurons of the latest block, listing the fleet's
// metagraph, and setting weights, which it records instead of sending to a chain.
type Pylon struct {
	fleet *Fleet
	token string // bearer token required on every API call; none when empty
	start time.Time

	mu   sync.Mutex
	sets []WeightsSet
}

// WeightsSet is one weights request Pylon accepted.
type WeightsSet struct {
	At       time.Time          `json:"at"`
	Identity string             `json:"identity"`
	Netuid   int                `json:"netuid"`
	Block    int64              `json:"block"` // the latest block when it arrived
	Weights  map[string]float64 `json:"weights"`
}

// NewPylon returns a Pylon stub serving fleet's metagraph; token, when not empty, is required as
// a bearer token.
func NewPylon(fleet *Fleet, token string) *Pylon {
	return &Pylon{fleet: fleet, token: token, start: time.Now()}
}

// Handler serves Pylon's API plus GET /weights-sets, the stub's record of accepted weights.
func (p *Pylon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, map[string]string{"status": "ok"}) })
	mux.HandleFunc("GET /api/v1/subnet/{netuid}/block/{block}/neurons", p.authorized(p.handleNeurons))
	mux.HandleFunc("PUT /api/v1/identity/{name}/subnet/{netuid}/weights", p.authorized(p.handleWeights))
	mux.HandleFunc("GET /weights-sets", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, p.WeightsSets()) })
	return mux
}

// WeightsSets returns the weights requests accepted so far, oldest first.
func (p *Pylon) WeightsSets() []WeightsSet {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sets)
}

// LatestBlock is the fleet's configured block plus one per PylonBlockTime since the stub started.
func (p *Pylon) LatestBlock() int64 {
	return p.fleet.cfg.Block + int64(time.Since(p.start)/PylonBlockTime)
}

// BlockHash is the stub's hash of block n: made up, but stable and shaped like the chain's.
func BlockHash(n int64) string {
	sum := sha256.Sum256([]byte("minersim block " + strconv.FormatInt(n, 10)))
	return "0x" + hex.EncodeToString(sum[:])
}

func (p *Pylon) authorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p.token != "" && r.Header.Get("Authorization") != "Bearer "+p.token {
			http.Error(w, `{"detail":"invalid identity token"}`, http.StatusUnauthorized)
			return
		}
		if r.PathValue("netuid") != strconv.Itoa(p.fleet.cfg.Netuid) {
			http.Error(w, `{"detail":"unknown subnet"}`, http.StatusNotFound)
			return
		}
		next(w, r)
	}
}

// pylonNeuron is a neuron as Pylon lists it.
type pylonNeuron struct {
	UID             int            `json:"uid"`
	Coldkey         string         `json:"coldkey"`
	Hotkey          string         `json:"hotkey"`
	Active          bool           `json:"active"`
	AxonInfo        pylonAxon      `json:"axon_info"`
	Stake           float64        `json:"stake"`
	Rank            float64        `json:"rank"`
	Emission        float64        `json:"emission"`
	Incentive       float64        `json:"incentive"`
	Consensus       float64        `json:"consensus"`
	Trust           float64        `json:"trust"`
	ValidatorTrust  float64        `json:"validator_trust"`
	Dividends       float64        `json:"dividends"`
	LastUpdate      int64          `json:"last_update"`
	ValidatorPermit bool           `json:"validator_permit"`
	PruningScore    int            `json:"pruning_score"`
	Stakes          map[string]any `json:"stakes"`
}

type pylonAxon struct {
	IP       string `json:"ip"`
	Port     int    `json:"port"`
	Protocol int    `json:"protocol"`
}

func (p *Pylon) handleNeurons(w http.ResponseWriter, r *http.Request) {
	latest := p.LatestBlock()
	block := latest
	if s := r.PathValue("block"); s != "latest" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > latest {
			http.Error(w, `{"detail":"block not found"}`, http.StatusNotFound)
			return
		}
		block = n
	}
	neurons := map[string]pylonNeuron{}
	for _, m := range p.fleet.Metagraph().Miners {
		neurons[m.Hotkey] = pylonNeuron{
			UID: m.UID, Coldkey: m.Coldkey, Hotkey: m.Hotkey, Active: true,
			AxonInfo: pylonAxon{IP: m.IP, Port: m.Port, Protocol: 4}, Stake: m.Stake,
			ValidatorPermit: m.Validator, LastUpdate: block,
			Stakes: map[string]any{"alpha": m.Stake, "tao": 0, "total": m.Stake},
		}
	}
	writeJSON(w, map[string]any{"block": map[string]any{"number": block, "hash": BlockHash(block)}, "neurons": neurons})
}

func (p *Pylon) handleWeights(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Weights map[string]float64 `json:"weights"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, pylonMaxBody)).Decode(&body); err != nil {
		http.Error(w, fmt.Sprintf(`{"detail":%q}`, "weights: "+err.Error()), http.StatusUnprocessableEntity)
		return
	}
	if err := p.checkWeights(body.Weights); err != nil {
		http.Error(w, fmt.Sprintf(`{"detail":%q}`, err.Error()), http.StatusUnprocessableEntity)
		return
	}
	set := WeightsSet{At: time.Now().UTC(), Identity: r.PathValue("name"), Netuid: p.fleet.cfg.Netuid, Block: p.LatestBlock(), Weights: body.Weights}
	p.mu.Lock()
	p.sets = append(p.sets, set)
	p.mu.Unlock()
	writeJSON(w, map[string]any{"detail": "weights update scheduled", "count": len(body.Weights)})
}

// checkWeights refuses what the chain would: no weights, a hotkey not in the metagraph, a weight
// that is not a finite number ≥ 0.
func (p *Pylon) checkWeights(weights map[string]float64) error {
	if len(weights) == 0 {
		return fmt.Errorf("weights: at least one is required")
	}
	known := map[string]bool{}
	for _, m := range p.fleet.Metagraph().Miners {
		known[m.Hotkey] = true
	}
	for hk, v := range weights {
		if !known[hk] {
			return fmt.Errorf("weights: hotkey %.64q is not registered", hk)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("weights: %s: must be a finite number ≥ 0", hk)
		}
	}
	return nil
}
