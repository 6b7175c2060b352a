package metagraph

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
)

// address returns a valid SS58 address (format 42) of a key made of byte b.
func address(t *testing.T, b byte) string {
	t.Helper()
	var key hotkey.PublicKey
	for i := range key {
		key[i] = b
	}
	addr, err := hotkey.EncodeSS58(key, hotkey.SubstrateFormat)
	require.NoError(t, err)
	return addr
}

// corrupt changes an address's last character, which breaks its checksum.
func corrupt(addr string) string {
	last := addr[len(addr)-1]
	repl := byte('2')
	if last == '2' {
		repl = '3'
	}
	return addr[:len(addr)-1] + string(repl)
}

func TestCheck(t *testing.T) {
	t.Parallel()

	hot, cold := address(t, 1), address(t, 2)
	good := Entry{UID: 3, Hotkey: hot, Coldkey: cold, IP: "203.0.113.7", Port: 8000, Stake: 12.5}
	tests := []struct {
		name       string
		change     func(*Entry)
		wantIP     string // when the entry is good
		wantReason string // when it is skipped
	}{
		{"Good", func(*Entry) {}, "203.0.113.7", ""},
		{"IPv6Canonical", func(e *Entry) { e.IP = "2001:DB8:0:0::1" }, "2001:db8::1", ""},
		{"IPv4MappedUnmapped", func(e *Entry) { e.IP = "::ffff:203.0.113.7" }, "203.0.113.7", ""},
		{"ZeroStake", func(e *Entry) { e.Stake = 0 }, "203.0.113.7", ""},
		{"NotServingIPv4", func(e *Entry) { e.IP, e.Port, e.Validator = "0.0.0.0", 0, true }, "0.0.0.0", ""},
		{"NotServingIPv6", func(e *Entry) { e.IP, e.Port = "::", 0 }, "::", ""},
		{"NotServingMapped", func(e *Entry) { e.IP, e.Port = "::ffff:0.0.0.0", 0 }, "0.0.0.0", ""},
		{"NegativeUID", func(e *Entry) { e.UID = -1 }, "", "uid -1 out of range"},
		{"HugeUID", func(e *Entry) { e.UID = 65536 }, "", "uid 65536 out of range"},
		{"HotkeyChecksum", func(e *Entry) { e.Hotkey = corrupt(hot) }, "", "hotkey: "},
		{"HotkeyNotSS58", func(e *Entry) { e.Hotkey = "miner-1" }, "", "hotkey: "},
		{"ColdkeyChecksum", func(e *Entry) { e.Coldkey = corrupt(cold) }, "", "coldkey: "},
		{"HostName", func(e *Entry) { e.IP = "miner.example.com" }, "", "is not an IP literal"},
		{"IPWithZone", func(e *Entry) { e.IP = "fe80::1%eth0" }, "", "is not an IP literal"},
		{"UnspecifiedWithPort", func(e *Entry) { e.IP = "0.0.0.0" }, "", "an unspecified address serves nothing"},
		{"UnspecifiedIPv6WithPort", func(e *Entry) { e.IP = "::" }, "", "an unspecified address serves nothing"},
		{"PortZero", func(e *Entry) { e.Port = 0 }, "", "port 0 out of range"},
		{"PortZeroBadIP", func(e *Entry) { e.IP, e.Port = "0.0.0.0.0", 0 }, "", "is not an IP literal"},
		{"PortHigh", func(e *Entry) { e.Port = 65536 }, "", "port 65536 out of range"},
		{"NegativeStake", func(e *Entry) { e.Stake = -1 }, "", "stake must be"},
		{"Undecodable", func(e *Entry) { e.DecodeErr = errors.New("port: not a number") }, "", "undecodable entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := good
			tt.change(&e)
			miners, skipped := Check([]Entry{e})
			if tt.wantReason != "" {
				require.Empty(t, miners)
				require.Len(t, skipped, 1)
				require.Contains(t, skipped[0].Reason, tt.wantReason)
				return
			}
			require.Empty(t, skipped)
			serving := e.Port != 0
			require.Equal(t, []Miner{{
				UID: 3, Hotkey: e.Hotkey, Coldkey: cold, IP: tt.wantIP, Port: int(e.Port), Stake: e.Stake,
				Validator: e.Validator, Serving: serving,
			}}, miners)
		})
	}
}

func TestCheckDuplicatesKeepTheFirst(t *testing.T) {
	t.Parallel()

	a, b, cold := address(t, 1), address(t, 2), address(t, 9)
	entries := []Entry{
		{UID: 0, Hotkey: a, Coldkey: cold, IP: "10.0.0.1", Port: 1},
		{UID: 1, Hotkey: a, Coldkey: cold, IP: "10.0.0.2", Port: 1}, // same hotkey
		{UID: 0, Hotkey: b, Coldkey: cold, IP: "10.0.0.3", Port: 1}, // same uid
		{UID: 2, Hotkey: b, Coldkey: cold, IP: "10.0.0.4", Port: 1},
	}
	miners, skipped := Check(entries)
	require.Len(t, miners, 2)
	require.Equal(t, "10.0.0.1", miners[0].IP)
	require.Equal(t, "10.0.0.4", miners[1].IP)
	require.Equal(t, []Skip{
		{Index: 1, UID: 1, Hotkey: a, Reason: "hotkey given twice"},
		{Index: 2, UID: 0, Hotkey: b, Reason: "uid given twice"},
	}, skipped)
}
