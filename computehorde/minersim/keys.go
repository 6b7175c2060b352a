package minersim

import (
	"fmt"
	"runtime"
	"sync"

	"drover.dev/computehorde/hotkey"
)

// minerKeys are one miner's dev keys.
type minerKeys struct {
	hot  *hotkey.Keypair
	cold string
}

// deriveMinerKeys derives every miner's hotkey and coldkey from dev URIs. Each derivation runs
// PBKDF2 (about 1.5 ms), so thousands of miners are derived on every core.
func deriveMinerKeys(seed string, n int) ([]minerKeys, error) {
	keys := make([]minerKeys, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				keys[i], errs[i] = deriveMinerKey(seed, i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func deriveMinerKey(seed string, i int) (minerKeys, error) {
	uri := fmt.Sprintf("//%s//%d", seed, i)
	hot, err := devKey(uri)
	if err != nil {
		return minerKeys{}, fmt.Errorf("derive miner %d hotkey: %w", i, err)
	}
	cold, err := devKey(uri + "//coldkey")
	if err != nil {
		return minerKeys{}, fmt.Errorf("derive miner %d coldkey: %w", i, err)
	}
	return minerKeys{hot: hot, cold: cold.Address()}, nil
}

// devKeys holds every dev key this process derived, by URI. A derivation costs 1.5 ms, and a
// hundred times that under the race detector, and every fleet with the same KeySeed derives the
// same keys: a test package starting fleets in parallel would spend its first seconds of CPU
// deriving them again and again, starving the batches already running (an honest miner's
// manifest then missed a 5 s bound). A Keypair is safe for concurrent use, so fleets share them.
var devKeys sync.Map // URI → *devKeyEntry

type devKeyEntry struct {
	once sync.Once
	key  *hotkey.Keypair
	err  error
}

// devKey derives the key of uri once per process.
func devKey(uri string) (*hotkey.Keypair, error) {
	v, _ := devKeys.LoadOrStore(uri, &devKeyEntry{})
	e := v.(*devKeyEntry)
	e.once.Do(func() { e.key, e.err = hotkey.FromURI(uri) })
	return e.key, e.err
}

// validatorSet is what miners know about validators, and the keys the fleet holds to sign
// busy-excuse receipts in other validators' names.
type validatorSet struct {
	byHotkey map[string]Validator
	keys     map[string]*hotkey.Keypair
	list     []Validator
	// unknown signs receipts as a validator no metagraph lists.
	unknown *hotkey.Keypair
}

func newValidatorSet(vs []Validator, seed string) (*validatorSet, error) {
	set := &validatorSet{byHotkey: map[string]Validator{}, keys: map[string]*hotkey.Keypair{}}
	for _, v := range vs {
		if v.URI != "" {
			key, err := devKey(v.URI)
			if err != nil {
				return nil, fmt.Errorf("validator %s: %w", v.URI, err)
			}
			if v.Hotkey != "" && v.Hotkey != key.Address() {
				return nil, fmt.Errorf("validator %s: hotkey %s does not match its uri", v.URI, v.Hotkey)
			}
			v.Hotkey = key.Address()
			set.keys[v.Hotkey] = key
		}
		if _, err := hotkey.ParseAddress(v.Hotkey); err != nil {
			return nil, fmt.Errorf("validator %q: %w", v.Hotkey, err)
		}
		set.byHotkey[v.Hotkey] = v
		set.list = append(set.list, v)
	}
	unknown, err := devKey("//" + seed + "-validator//unknown")
	if err != nil {
		return nil, fmt.Errorf("derive unknown validator: %w", err)
	}
	set.unknown = unknown
	return set, nil
}

// authorize returns the GenericError details a miner sends a validator it refuses, or "".
func (s *validatorSet) authorize(validator string) string {
	v, ok := s.byHotkey[validator]
	switch {
	case !ok:
		return "Unknown validator: " + validator
	case v.Inactive || v.Stake < MinValidatorStake:
		return "Inactive validator: " + validator
	}
	return ""
}

// issuer returns a key the fleet holds, other than the requesting validator's, matching keep.
func (s *validatorSet) issuer(requester string, keep func(Validator) bool) *hotkey.Keypair {
	for _, v := range s.list {
		if key := s.keys[v.Hotkey]; key != nil && v.Hotkey != requester && keep(v) {
			return key
		}
	}
	return nil
}
