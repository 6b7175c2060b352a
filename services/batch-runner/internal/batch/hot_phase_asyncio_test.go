package batch

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
)

// asyncioScript is ComputeHorde's method of sending job requests, written from the
// synthetic-jobs flow: a task per executor, a barrier inside the task, a pre-serialised
// V0JobRequest sent with the websockets client.
const asyncioScript = "testdata/asyncio_validator.py"

// python is the interpreter that runs it: BENCH_PYTHON, else Debian's /usr/bin/python3 (where
// python3-websockets installs), else python3 on the PATH.
func python() string {
	if p := os.Getenv("BENCH_PYTHON"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// asyncioCheck says why the asyncio method cannot run, or "".
var asyncioCheck = sync.OnceValue(func() string {
	out, err := exec.Command(python(), "-c", "import websockets").CombinedOutput()
	if err != nil {
		return python() + " has no websockets package (scripts/bench.sh installs Debian's python3-websockets): " + string(bytes.TrimSpace(out))
	}
	return ""
})

type asyncioMiner struct {
	URL  string   `json:"url"`
	Auth string   `json:"auth"`
	Jobs []string `json:"jobs"`
}

// asyncioMethod runs the asyncio validator on the validator's cores against the fleet, with
// the floor's V0JobRequests (fresh job UUIDs) and connection layout (one connection per miner,
// its executors' frames on it; connections of its own, which only authenticate), and returns its send spread and the arrival spread minersim saw. ok is false, with
// nothing run, when python3 or its websockets package is missing.
func asyncioMethod(b *testing.B, fleet *benchFleet, key *hotkey.Keypair, jobs []int, cpus []int) (send, arrival time.Duration, ok bool) {
	b.Helper()
	if asyncioCheck() != "" {
		return 0, 0, false
	}
	perMiner, uuids := floorJobs(b, fleet, jobs)
	miners := make([]asyncioMiner, len(fleet.plan.Miners))
	for i, m := range fleet.plan.Miners {
		auth, err := protocol.Encode(protocol.NewValidatorAuth(key, m.Hotkey, time.Now()))
		require.NoError(b, err)
		miners[i] = asyncioMiner{URL: protocol.ValidatorInterfaceURL(m.IP, m.Port, key.Address()), Auth: string(auth), Jobs: []string{}}
		for _, j := range perMiner[i] {
			miners[i].Jobs = append(miners[i].Jobs, string(j.request))
		}
	}
	in, err := json.Marshal(map[string]any{"miners": miners})
	require.NoError(b, err)
	cmd := pinned(cpus, python(), asyncioScript)
	cmd.Stdin, cmd.Stderr = bytes.NewReader(in), os.Stderr
	since := time.Now().UnixNano()
	out, err := cmd.Output()
	require.NoError(b, err, "asyncio validator")
	var sent struct{ Before, After []int64 }
	require.NoError(b, json.Unmarshal(out, &sent))
	require.Len(b, sent.Before, len(uuids), "the asyncio validator sent every job")
	send = time.Duration(slices.Max(sent.After) - slices.Min(sent.Before))
	return send, arrivalSpread(fleet.waitArrivals(b, uuids, since)), true
}
