package work

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// logBuffer holds a JSON log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// logger returns a logger writing to b.
func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// uiAction is one river_ui_action log line.
type uiAction struct {
	Kind   string `json:"kind"`
	JobID  int64  `json:"job_id"`
	Action string `json:"action"`
	Did    string `json:"did"`
}

// uiActions returns the river_ui_action lines logged so far, in order.
func (b *logBuffer) uiActions(t *testing.T) []uiAction {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []uiAction
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var line struct {
			Msg string `json:"msg"`
			uiAction
		}
		require.NoError(t, dec.Decode(&line))
		if line.Msg == "river_ui_action" {
			out = append(out, line.uiAction)
		}
	}
	return out
}

// retried presses River UI's Retry on finished job id in tx and returns the job as it now is.
func retried(t *testing.T, tx pgx.Tx, id int64) *rivertype.JobRow {
	t.Helper()
	client, err := river.NewClient(riverpgxv5.New(nil), &river.Config{})
	require.NoError(t, err)
	job, err := client.JobRetryTx(context.Background(), tx, id)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateAvailable, job.State)
	return job
}
