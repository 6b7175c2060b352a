package main

import (
	"strings"

	"drover.dev/computehorde/subtensor"
)

// aliasSource is the METAGRAPH_URL that ComputeHorde's settings name: pylon+PYLON_ADDRESS, or
// else the subtensor node BITTENSOR_NETWORK names.
func aliasSource(cfg Config) (string, error) {
	if cfg.PylonAddress != "" {
		addr := cfg.PylonAddress
		if !strings.Contains(addr, "://") {
			addr = "http://" + addr
		}
		return "pylon+" + addr, nil
	}
	if cfg.Network == "" {
		return "", nil
	}
	node, err := subtensor.NetworkURL(cfg.Network)
	if err != nil {
		return "", err
	}
	return "subtensor+" + node, nil
}
