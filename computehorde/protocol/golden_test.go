package protocol

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldenFrames returns the frames under testdata: reference/ holds upstream ComputeHorde's documented
// examples verbatim (the decline's elided receipt payload filled in), constructed/ one frame per
// remaining message type and volume or upload variant, built from upstream's field lists.
func goldenFrames(t testing.TB) map[string][]byte {
	t.Helper()

	paths, err := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	frames := make(map[string][]byte, len(paths))
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		frames[filepath.ToSlash(path)] = bytes.TrimSuffix(data, []byte("\n"))
	}
	return frames
}

func TestGoldenFramesRoundTrip(t *testing.T) {
	t.Parallel()

	for path, frame := range goldenFrames(t) {
		t.Run(path, func(t *testing.T) {
			t.Parallel()

			msg, err := Decode(frame)
			require.NoError(t, err)
			wantType, _, _ := strings.Cut(filepath.Base(path), ".")
			wantType, _, _ = strings.Cut(wantType, "_")
			require.Equal(t, wantType, msg.MessageType())

			encoded, err := Encode(msg)
			require.NoError(t, err)
			require.Equal(t, string(frame), string(encoded))
		})
	}
}

func TestGoldenFramesCoverEveryMessageType(t *testing.T) {
	t.Parallel()

	seen := map[string]bool{}
	for _, frame := range goldenFrames(t) {
		msg, err := Decode(frame)
		require.NoError(t, err)
		seen[msg.MessageType()] = true
	}
	for messageType := range messageKinds {
		require.True(t, seen[messageType], "no golden frame for %s", messageType)
	}
}

func TestGoldenFramesDecodeBySender(t *testing.T) {
	t.Parallel()

	for path, frame := range goldenFrames(t) {
		t.Run(path, func(t *testing.T) {
			t.Parallel()

			msg, err := Decode(frame)
			require.NoError(t, err)
			sender := messageKinds[msg.MessageType()].sender

			_, fromMinerErr := DecodeFromMiner(frame)
			_, fromValidatorErr := DecodeFromValidator(frame)
			require.Equal(t, sender&SenderMiner != 0, fromMinerErr == nil, "from miner: %v", fromMinerErr)
			require.Equal(t, sender&SenderValidator != 0, fromValidatorErr == nil, "from validator: %v", fromValidatorErr)
		})
	}
}
