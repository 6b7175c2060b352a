package logging

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("AutoIsJSONOffTerminal", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		logger, err := New(&buf, "info", "auto")
		require.NoError(t, err)
		logger.Info("hello", "n", 1)
		var rec map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
		require.Equal(t, "hello", rec["msg"])
	})
	t.Run("LevelFilters", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		logger, err := New(&buf, "warn", "text")
		require.NoError(t, err)
		logger.Info("quiet")
		require.Empty(t, buf.String())
	})
	t.Run("BadValues", func(t *testing.T) {
		t.Parallel()
		_, err := New(&bytes.Buffer{}, "loud", "text")
		require.ErrorContains(t, err, "log level")
		_, err = New(&bytes.Buffer{}, "info", "xml")
		require.ErrorContains(t, err, "log format")
	})
}
