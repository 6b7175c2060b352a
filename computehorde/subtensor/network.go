package subtensor

import (
	"fmt"
	"net"
	"strings"
)

// NetworkURL maps BITTENSOR_NETWORK to a node's websocket URL as Bittensor does: finney and test
// are the public entry points, ws:// and wss:// URLs are taken as they are, anything else is
// host:port of a node.
func NetworkURL(network string) (string, error) {
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
