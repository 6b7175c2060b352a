package main

import (
	"fmt"
	"net"
	"strings"
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
	node, err := subtensorURL(cfg.Network)
	if err != nil {
		return "", err
	}
	return "subtensor+" + node, nil
}

// subtensorURL maps BITTENSOR_NETWORK to a node's websocket URL as Bittensor does: finney and
// test are the public entry points, anything else is host:port of a node.
func subtensorURL(network string) (string, error) {
	switch network {
	case "finney":
		return "wss://entrypoint-finney.opentensor.ai:443", nil
	case "test":
		return "wss://test.finney.opentensor.ai:443", nil
	}
	if strings.HasPrefix(network, "ws://") || strings.HasPrefix(network, "wss://") {
		return network, nil
	}
	if _, _, err := net.SplitHostPort(network); err != nil {
		return "", fmt.Errorf("BITTENSOR_NETWORK: %q is not finney, test or host:port", network)
	}
	return "ws://" + network, nil
}
