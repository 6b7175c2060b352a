package main

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPortTakenErrorSaysWhatToDo requires that the error names the port and its holder, or says
// how to find the holder when devrun could not.
func TestPortTakenErrorSaysWhatToDo(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		holder *portHolder
		want   string
	}{
		"Found": {&portHolder{pid: 4242, cmdline: "/x/.data/bin/minersim -block 1"},
			"minersim cannot listen on 127.0.0.1:8090: port 8090 is held by pid 4242 (/x/.data/bin/minersim -block 1); stop it and run again"},
		"NotFound": {nil,
			"minersim cannot listen on 127.0.0.1:8090: port 8090 is held by another process; run `ss -ltnp 'sport = :8090'` to see which"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := &portTakenError{owner: "minersim", addr: "127.0.0.1:8090", holder: tc.holder}
			require.EqualError(t, err, tc.want)
		})
	}
}

// procNetTCP is /proc/net/tcp and tcp6 as Linux prints them, with sockets on port 8090 (1F9A)
// in several states and at several addresses.
const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F9A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F9A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 100 0 0 10 0
   2: 0200007F:1F9A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F9A 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 444 1 0000000000000000 20 4 30 10 -1
   4: 0100007F:1F9B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0000000000000000 100 0 0 10 0
   5: 00000000000000000000000000000000:1F9A 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 666 1 0000000000000000 100 0 0 10 0
   6: 0000000000000000FFFF00000100007F:1F9A 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0
   7: 00000000000000000000000001000000:1F9A 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 888 1 0000000000000000 100 0 0 10 0
`

// TestListeningInodes requires that the sockets found are those listening on the port at an
// address that collides with the one wanted: the same one, or any address on either side.
func TestListeningInodes(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string][]string{
		"127.0.0.1:8090": {"111", "222", "666", "777"},
		"127.0.0.2:8090": {"222", "333", "666"},
		"[::1]:8090":     {"222", "666", "888"},
		"0.0.0.0:8090":   {"111", "222", "333", "666", "777", "888"},
		"127.0.0.1:8091": {"555"},
		"127.0.0.1:8092": {},
	} {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			got := listeningInodes([]byte(procNetTCP), netip.MustParseAddrPort(addr))
			require.ElementsMatch(t, want, keys(got))
		})
	}
}

func keys(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}
