package minersim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"drover.dev/computehorde/protocol"
)

// Fleet serves simulated miners and the control endpoints. Start builds one; Close stops it.
type Fleet struct {
	cfg        Config
	miners     []*miner
	validators *validatorSet
	recorder   recorder
	control    *http.Server
	controlURL string

	jobsMu sync.Mutex
	jobs   []*job

	answerRounds answerRounds
}

// MinerInfo is where a simulated miner listens and who it is.
type MinerInfo struct {
	Index   int    `json:"index"`
	UID     int    `json:"uid"`
	Hotkey  string `json:"hotkey"`
	Coldkey string `json:"coldkey"`
	IP      string `json:"ip"`
	Port    int    `json:"port"`
}

// URL is the websocket URL a validator with the given hotkey connects to.
func (m MinerInfo) URL(validatorHotkey string) string {
	return protocol.ValidatorInterfaceURL(m.IP, m.Port, validatorHotkey)
}

// Start derives the miners' keys, opens every listener and serves until Close. On error
// nothing is left listening.
func Start(ctx context.Context, cfg Config) (*Fleet, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("minersim config: %w", err)
	}
	validators, err := newValidatorSet(cfg.Validators, cfg.KeySeed)
	if err != nil {
		return nil, err
	}
	keys, err := deriveMinerKeys(cfg.KeySeed, cfg.Miners)
	if err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, validators: validators}
	addrs := minerAddrs(cfg.BaseIP, cfg.Miners)
	for i := range cfg.Miners {
		m, err := f.listenMiner(ctx, i, keys[i], addrs[i])
		if err != nil {
			f.Close()
			return nil, err
		}
		f.miners = append(f.miners, m)
	}
	if err := f.listenControl(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// minerAddrs lists n loopback addresses from base on, skipping .0 and .255, which some tools
// treat as network and broadcast addresses even on lo.
func minerAddrs(base netip.Addr, n int) []netip.Addr {
	addrs := make([]netip.Addr, 0, n)
	for a := base; len(addrs) < n; a = a.Next() {
		if last := a.As4()[3]; last != 0 && last != 255 {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

func (f *Fleet) listenMiner(ctx context.Context, i int, keys minerKeys, ip netip.Addr) (*miner, error) {
	port := 0
	if f.cfg.BasePort != 0 {
		port = f.cfg.BasePort + i
	}
	var lc net.ListenConfig
	if f.cfg.Scenario.stopsReading(i) {
		lc.Control = smallReceiveBuffer
	}
	l, err := lc.Listen(ctx, "tcp4", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listen miner %d on %s: %w", i, ip, err)
	}
	info := MinerInfo{
		Index: i, UID: i, Hotkey: keys.hot.Address(), Coldkey: keys.cold,
		IP: ip.String(), Port: l.Addr().(*net.TCPAddr).Port,
	}
	m := newMiner(f, info, keys.hot)
	m.serve(l)
	return m, nil
}

func (f *Fleet) listenControl(ctx context.Context) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", f.cfg.ControlAddr)
	if err != nil {
		return fmt.Errorf("listen control on %s: %w", f.cfg.ControlAddr, err)
	}
	f.controlURL = "http://" + l.Addr().String()
	f.control = &http.Server{
		Handler:           f.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      time.Minute,
	}
	go func() { _ = f.control.Serve(l) }()
	return nil
}

// ControlURL is the base URL of the metagraph, arrival and statistics endpoints.
func (f *Fleet) ControlURL() string { return f.controlURL }

// Miners returns every miner's identity and address, in index order.
func (f *Fleet) Miners() []MinerInfo {
	infos := make([]MinerInfo, len(f.miners))
	for i, m := range f.miners {
		infos[i] = m.info
	}
	return infos
}

// Executors is the number of executors the fleet advertises across all miners.
func (f *Fleet) Executors() int {
	per := 0
	for _, e := range f.cfg.Manifest {
		per += e.Count
	}
	return per * len(f.miners)
}

// Close stops listening, closes every connection and waits for the miners' goroutines.
func (f *Fleet) Close() error {
	var errs []error
	if f.control != nil {
		errs = append(errs, f.control.Close())
	}
	for _, m := range f.miners {
		errs = append(errs, m.close())
	}
	return errors.Join(errs...)
}

func (f *Fleet) addJob(j *job) {
	f.jobsMu.Lock()
	f.jobs = append(f.jobs, j)
	f.jobsMu.Unlock()
}

// Jobs returns what every miner saw of every job offered to it so far, in arrival order.
func (f *Fleet) Jobs() []JobRecord {
	f.jobsMu.Lock()
	jobs := slices.Clone(f.jobs)
	f.jobsMu.Unlock()
	records := make([]JobRecord, len(jobs))
	for i, j := range jobs {
		records[i] = j.record()
	}
	return records
}

// Stats returns each miner's counters, in index order.
func (f *Fleet) Stats() []MinerStats {
	stats := make([]MinerStats, len(f.miners))
	for i, m := range f.miners {
		stats[i] = m.stats()
	}
	return stats
}
