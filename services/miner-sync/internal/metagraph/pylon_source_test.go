package metagraph

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testHash = "0x" + "ab12000000000000000000000000000000000000000000000000000000000000"

// pylonNeuronJSON is one neuron as Pylon lists it.
func pylonNeuronJSON(uid int, hot, cold, ip string, port int) string {
	return fmt.Sprintf(`{"uid":%d,"coldkey":%q,"hotkey":%q,"active":true,"axon_info":{"ip":%q,"port":%d,"protocol":4},`+
		`"stake":12.5,"rank":0,"emission":0,"incentive":0,"consensus":0,"trust":0,"validator_trust":0,"dividends":0,`+
		`"last_update":100,"validator_permit":%t,"pruning_score":0,"stakes":{"alpha":12.5,"tao":0,"total":12.5}}`,
		uid, cold, hot, ip, port, uid == 0)
}

func TestDecodePylon(t *testing.T) {
	t.Parallel()
	hot, hot2, cold := address(t, 1), address(t, 2), address(t, 3)
	good := fmt.Sprintf(`{"block":{"number":77,"hash":%q},"neurons":{%q:%s,%q:%s}}`, testHash,
		hot2, pylonNeuronJSON(1, hot2, cold, "10.0.0.2", 8001), hot, pylonNeuronJSON(0, hot, cold, "0.0.0.0", 0))
	tests := []struct {
		name       string
		body       string
		maxBytes   int64
		maxEntries int
		wantErr    string
		wantBad    []string // per entry in uid order: the DecodeErr text, or "" for a decoded entry
	}{
		{"Good", good, 4096, 10, "", []string{"", ""}},
		{"Empty", `{"block":{"number":1,"hash":"` + testHash + `"},"neurons":{}}`, 4096, 10, "", []string{}},
		{"BadNeuronsKept", `{"block":{"number":1,"hash":"` + testHash + `"},"neurons":{"a":7,"b":{"uid":3,"hotkey":"c","axon_info":{}},"d":{"hotkey":"d"},"e":{"uid":4,"hotkey":"e"}}}`,
			4096, 10, "", []string{"cannot unmarshal", "listed under", "uid is missing", "axon_info is missing"}},
		{"TooManyBytes", good, 100, 10, "more than 100 bytes", nil},
		{"TooManyEntries", good, 4096, 1, "2 entries, at most 1", nil},
		{"NotJSON", `<html>`, 4096, 10, "decode pylon neurons", nil},
		{"NoBlock", `{"neurons":{}}`, 4096, 10, "block.number and neurons are required", nil},
		{"NoNeurons", `{"block":{"number":1,"hash":"` + testHash + `"}}`, 4096, 10, "are required", nil},
		{"BadHash", `{"block":{"number":1,"hash":"0x12"},"neurons":{}}`, 4096, 10, "is not 0x and 64 hex digits", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap, err := DecodePylon(strings.NewReader(tt.body), tt.maxBytes, tt.maxEntries)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, testHash, snap.BlockHash)
			require.Len(t, snap.Entries, len(tt.wantBad))
			for i, want := range tt.wantBad {
				if want == "" {
					require.NoError(t, snap.Entries[i].DecodeErr, "entry %d", i)
					continue
				}
				require.ErrorContains(t, snap.Entries[i].DecodeErr, want, "entry %d", i)
			}
		})
	}
	t.Run("EntriesByUID", func(t *testing.T) {
		t.Parallel()
		snap, err := DecodePylon(strings.NewReader(good), 4096, 10)
		require.NoError(t, err)
		require.Equal(t, int64(77), snap.Block)
		require.Equal(t, []Entry{
			{UID: 0, Hotkey: hot, Coldkey: cold, IP: "0.0.0.0", Port: 0, Stake: 12.5, Validator: true},
			{UID: 1, Hotkey: hot2, Coldkey: cold, IP: "10.0.0.2", Port: 8001, Stake: 12.5},
		}, snap.Entries)
		miners, skipped := Check(snap.Entries)
		require.Empty(t, skipped)
		require.Len(t, miners, 2)
	})
}

func TestPylonSource(t *testing.T) {
	t.Parallel()
	hot, cold := address(t, 1), address(t, 2)
	answer := fmt.Sprintf(`{"block":{"number":9,"hash":%q},"neurons":{%q:%s}}`, testHash, hot, pylonNeuronJSON(5, hot, cold, "10.0.0.5", 9000))
	serve := func(t *testing.T, h http.HandlerFunc) *PylonSource {
		t.Helper()
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return &PylonSource{BaseURL: srv.URL + "/", Token: "s3cret", Netuid: 12, Timeout: 200 * time.Millisecond, MaxBytes: 4096, MaxEntries: 10}
	}

	t.Run("AsksForTheSubnetWithTheToken", func(t *testing.T) {
		t.Parallel()
		src := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v1/subnet/12/block/latest/neurons" || r.Header.Get("Authorization") != "Bearer s3cret" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(answer))
		})
		snap, err := src.Fetch(context.Background())
		require.NoError(t, err)
		require.Equal(t, Snapshot{Netuid: 12, Block: 9, BlockHash: testHash, Entries: []Entry{
			{UID: 5, Hotkey: hot, Coldkey: cold, IP: "10.0.0.5", Port: 9000, Stake: 12.5},
		}}, snap)
	})
	t.Run("ErrorStatus", func(t *testing.T) {
		t.Parallel()
		src := serve(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
		_, err := src.Fetch(context.Background())
		require.ErrorContains(t, err, "status 503")
	})
	t.Run("TooLargeStreamed", func(t *testing.T) {
		t.Parallel()
		src := serve(t, func(w http.ResponseWriter, _ *http.Request) {
			for range 100 {
				_, _ = w.Write([]byte(strings.Repeat(" ", 64)))
				w.(http.Flusher).Flush()
			}
		})
		_, err := src.Fetch(context.Background())
		require.ErrorIs(t, err, ErrTooLarge)
	})
	t.Run("TooSlow", func(t *testing.T) {
		t.Parallel()
		src := serve(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"block":`))
			w.(http.Flusher).Flush()
			select { // a body that trickles in stops at the timeout too
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		// The server holds the answer for 5 s; the caller's context has no deadline, so only
		// the client's own timeout ends the call with DeadlineExceeded.
		_, err := src.Fetch(context.Background())
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("StringHidesTheToken", func(t *testing.T) {
		t.Parallel()
		src := &PylonSource{BaseURL: "http://user:pw@pylon:8000?x=1", Token: "s3cret", Netuid: 12}
		require.Equal(t, "pylon+http://pylon:8000 netuid 12", src.String())
	})
}
