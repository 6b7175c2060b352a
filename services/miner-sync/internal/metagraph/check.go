package metagraph

import (
	"errors"
	"fmt"
	"math"
	"net/netip"

	"drover.dev/computehorde/hotkey"
)

// Miner is an entry that passed Check, ready to store.
type Miner struct {
	UID       int
	Hotkey    string
	Coldkey   string
	IP        string // canonical form
	Port      int
	Stake     float64
	Validator bool

	// Serving is false for a neuron with no axon (ip 0.0.0.0 or ::, port 0), as the chain lists
	// validators: kept for its stake, never tested.
	Serving bool
}

// Skip is an entry Check refused, and why.
type Skip struct {
	Index  int    `json:"index"`
	UID    int64  `json:"uid"`
	Hotkey string `json:"hotkey"`
	Reason string `json:"reason"`
}

// Check splits entries into the good and the skipped. A bad entry never stops the others: it is
// skipped with its reason. Of two entries with the same hotkey or uid the first is kept.
func Check(entries []Entry) ([]Miner, []Skip) {
	good := make([]Miner, 0, len(entries))
	var skipped []Skip
	hotkeys, uids := map[string]bool{}, map[int64]bool{}
	for i, e := range entries {
		m, err := check(e)
		switch {
		case err != nil:
		case hotkeys[e.Hotkey]:
			err = errors.New("hotkey given twice")
		case uids[e.UID]:
			err = errors.New("uid given twice")
		}
		if err != nil {
			skipped = append(skipped, Skip{Index: i, UID: e.UID, Hotkey: truncate(e.Hotkey, 64), Reason: truncate(err.Error(), 200)})
			continue
		}
		hotkeys[e.Hotkey], uids[e.UID] = true, true
		good = append(good, m)
	}
	return good, skipped
}

func check(e Entry) (Miner, error) {
	if e.DecodeErr != nil {
		return Miner{}, fmt.Errorf("undecodable entry: %w", e.DecodeErr)
	}
	if e.UID < 0 || e.UID > math.MaxUint16 {
		return Miner{}, fmt.Errorf("uid %d out of range 0..65535", e.UID)
	}
	if _, err := hotkey.ParseAddress(e.Hotkey); err != nil {
		return Miner{}, fmt.Errorf("hotkey: %w", err)
	}
	if _, err := hotkey.ParseAddress(e.Coldkey); err != nil {
		return Miner{}, fmt.Errorf("coldkey: %w", err)
	}
	ip, err := netip.ParseAddr(e.IP)
	if err != nil || ip.Zone() != "" {
		return Miner{}, fmt.Errorf("ip %q is not an IP literal", truncate(e.IP, 64))
	}
	ip = ip.Unmap()
	serving := !ip.IsUnspecified() || e.Port != 0
	switch {
	case !serving:
	case ip.IsUnspecified():
		return Miner{}, fmt.Errorf("ip %s with port %d: an unspecified address serves nothing", ip, e.Port)
	case e.Port < 1 || e.Port > 65535:
		return Miner{}, fmt.Errorf("port %d out of range 1..65535", e.Port)
	}
	if math.IsNaN(e.Stake) || math.IsInf(e.Stake, 0) || e.Stake < 0 {
		return Miner{}, errors.New("stake must be a finite number ≥ 0")
	}
	return Miner{
		UID: int(e.UID), Hotkey: e.Hotkey, Coldkey: e.Coldkey, IP: ip.String(),
		Port: int(e.Port), Stake: e.Stake, Validator: e.Validator, Serving: serving,
	}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
