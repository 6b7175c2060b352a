package minersim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Scenario says which miners and executors misbehave and how. A job's behaviour is the first
// of: its executor's entry, its miner's entry, Default. Entries replace, they do not merge, so
// an executor entry states everything that executor does.
type Scenario struct {
	Default Behaviour `json:"default"`
	// Miners maps a miner index to its behaviour.
	Miners map[int]Behaviour `json:"miners,omitempty"`
	// Executors maps "<miner>/<class>/<slot>" to a behaviour. A miner gives each accepted job
	// the lowest free slot of its class, so with one validator sending jobs in order slot k is
	// the (k+1)-th job of that class.
	Executors map[string]Behaviour `json:"executors,omitempty"`
}

// LoadScenario reads a scenario file.
func LoadScenario(path string) (Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("read scenario: %w", err)
	}
	return ParseScenario(data)
}

// ParseScenario reads a scenario's JSON, refusing unknown fields so a typo cannot silently
// leave a miner honest.
func ParseScenario(data []byte) (Scenario, error) {
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, fmt.Errorf("parse scenario: %w", err)
	}
	return s, s.Validate()
}

// Validate reports the first behaviour holding an unknown value.
func (s Scenario) Validate() error {
	if err := s.Default.Validate(); err != nil {
		return fmt.Errorf("default: %w", err)
	}
	for i, b := range s.Miners {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("miner %d: %w", i, err)
		}
	}
	for key, b := range s.Executors {
		if _, _, _, err := parseExecutorKey(key); err != nil {
			return err
		}
		if err := b.Validate(); err != nil {
			return fmt.Errorf("executor %s: %w", key, err)
		}
	}
	return nil
}

// ForMiner is the behaviour of a miner's connection-level messages (the manifest).
func (s Scenario) ForMiner(miner int) Behaviour {
	if b, ok := s.Miners[miner]; ok {
		return b
	}
	return s.Default
}

// ForExecutor is the behaviour of the job held by one executor slot.
func (s Scenario) ForExecutor(miner int, class string, slot int) Behaviour {
	if b, ok := s.Executors[ExecutorKey(miner, class, slot)]; ok {
		return b
	}
	return s.ForMiner(miner)
}

// ExecutorKey names an executor slot in Scenario.Executors.
func ExecutorKey(miner int, class string, slot int) string {
	return fmt.Sprintf("%d/%s/%d", miner, class, slot)
}

func parseExecutorKey(key string) (miner int, class string, slot int, err error) {
	first, rest, ok1 := strings.Cut(key, "/")
	i := strings.LastIndex(rest, "/")
	if !ok1 || i <= 0 {
		return 0, "", 0, fmt.Errorf("executor key %q: want <miner>/<class>/<slot>", key)
	}
	miner, err1 := strconv.Atoi(first)
	slot, err2 := strconv.Atoi(rest[i+1:])
	if err1 != nil || err2 != nil || miner < 0 || slot < 0 {
		return 0, "", 0, fmt.Errorf("executor key %q: miner and slot must be non-negative integers", key)
	}
	return miner, rest[:i], slot, nil
}

// Apply adds one behaviour given as a flag: "TARGET:key=value,key=value" where TARGET is "*"
// (every miner), a miner index "3", a range "3-7" or an executor "3/always_on.test/0", and the
// keys are Behaviour's JSON names. Later specs replace earlier ones for the same target.
func (s *Scenario) Apply(spec string) error {
	target, body, ok := strings.Cut(spec, ":")
	if !ok {
		return fmt.Errorf("behaviour %q: want TARGET:key=value[,key=value]", spec)
	}
	b, err := parseBehaviourBody(body)
	if err != nil {
		return fmt.Errorf("behaviour %q: %w", spec, err)
	}
	return s.set(target, b)
}

func (s *Scenario) set(target string, b Behaviour) error {
	if target == "*" {
		s.Default = b
		return nil
	}
	if strings.Contains(target, "/") {
		if _, _, _, err := parseExecutorKey(target); err != nil {
			return err
		}
		if s.Executors == nil {
			s.Executors = map[string]Behaviour{}
		}
		s.Executors[target] = b
		return nil
	}
	lo, hi, err := parseRange(target)
	if err != nil {
		return err
	}
	if s.Miners == nil {
		s.Miners = map[int]Behaviour{}
	}
	for i := lo; i <= hi; i++ {
		s.Miners[i] = b
	}
	return nil
}

func parseRange(target string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(target, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := lo, error(nil)
	if isRange {
		hi, err2 = strconv.Atoi(b)
	}
	if err1 != nil || err2 != nil || lo < 0 || hi < lo {
		return 0, 0, fmt.Errorf("target %q: want *, N, A-B or N/class/slot", target)
	}
	return lo, hi, nil
}

// parseBehaviourBody turns "decline=busy_valid,answer_delay=2s" into a Behaviour by way of its
// JSON form, so flags and scenario files cannot drift apart.
func parseBehaviourBody(body string) (Behaviour, error) {
	fields := map[string]string{}
	for kv := range strings.SplitSeq(body, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return Behaviour{}, fmt.Errorf("%q: want key=value", kv)
		}
		fields[k] = v
	}
	data, err := json.Marshal(fields)
	if err != nil {
		return Behaviour{}, fmt.Errorf("encode fields: %w", err)
	}
	var b Behaviour
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Behaviour{}, err
	}
	return b, b.Validate()
}

// stopsReading reports whether any behaviour of a miner stops reading its socket, so its
// listener can be given a small receive buffer before any connection is accepted.
func (s Scenario) stopsReading(miner int) bool {
	if s.ForMiner(miner).stopsReading() {
		return true
	}
	prefix := strconv.Itoa(miner) + "/"
	for key, b := range s.Executors {
		if strings.HasPrefix(key, prefix) && b.stopsReading() {
			return true
		}
	}
	return false
}
