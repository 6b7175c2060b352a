package queuetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// uiActionMsg is the message of the line queue.LogUIAction writes. It is spelled here rather than
// imported because queue's own tests import this package; TestUIActionLog checks that the two
// agree.
const uiActionMsg = "river_ui_action"

// uiActionWait bounds WaitUIActions: long enough for a service under the race detector on a busy
// machine to commit a job's end and log the press after it.
const uiActionWait = 20 * time.Second

// UIAction is one river_ui_action line (queue.LogUIAction): which job a River UI button press
// reached, which button it was, and what the worker did about it.
type UIAction struct {
	Kind   string `json:"kind"`
	JobID  int64  `json:"job_id"`
	Action string `json:"action"`
	Did    string `json:"did"`
}

// UIActionLog is where a service or worker under test writes its JSON log, so that the test can
// read back the river_ui_action lines its River UI presses left. Every test of a press needs one,
// and services write from many goroutines while the test reads, so it is safe for concurrent use.
// The zero value is ready to use.
type UIActionLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p, one or more whole log lines, as slog's JSON handler writes them.
func (l *UIActionLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Logger returns a logger writing JSON lines at info level to l, for a worker built in a test;
// a service started in a test is given l itself as its log's writer.
func (l *UIActionLog) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, nil))
}

// String returns the whole log so far, for a failing test to show it.
func (l *UIActionLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Lines returns every line logged so far, decoded, in order, for a test that reads lines other
// than river_ui_action too.
func (l *UIActionLog) Lines(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.NoError(t, l.decode(func(line []byte) error {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	}))
	return out
}

// UIActions returns the river_ui_action lines logged so far, in order: all of them, or those of
// the named kinds only.
func (l *UIActionLog) UIActions(t testing.TB, kinds ...string) []UIAction {
	t.Helper()
	out, err := l.uiActions(kinds)
	require.NoError(t, err)
	return out
}

// WaitUIActions waits, at most 20 s, until n river_ui_action lines are logged, and returns all of
// them logged by then, in order. A worker logs a press after the transaction that ends its job has
// committed, so the line can come after the job's River state that a test waited for.
func (l *UIActionLog) WaitUIActions(t testing.TB, n int) []UIAction {
	t.Helper()
	var out []UIAction
	var err error
	// The condition runs outside the test's goroutine, where it must not fail the test: it
	// stops on a decoding error and the test fails with it here.
	require.Eventually(t, func() bool {
		out, err = l.uiActions(nil)
		return err != nil || len(out) >= n
	}, uiActionWait, 10*time.Millisecond, "%d river_ui_action lines", n)
	require.NoError(t, err)
	return out
}

// uiActions returns the river_ui_action lines of kinds (every kind when empty) logged so far.
func (l *UIActionLog) uiActions(kinds []string) ([]UIAction, error) {
	var out []UIAction
	err := l.decode(func(line []byte) error {
		var a struct {
			Msg string `json:"msg"`
			UIAction
		}
		if err := json.Unmarshal(line, &a); err != nil {
			return err
		}
		if a.Msg == uiActionMsg && (len(kinds) == 0 || slices.Contains(kinds, a.Kind)) {
			out = append(out, a.UIAction)
		}
		return nil
	})
	return out, err
}

// decode calls each with every line logged so far, in order, and stops at its first error.
func (l *UIActionLog) decode(each func(line []byte) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	dec := json.NewDecoder(bytes.NewReader(l.buf.Bytes()))
	for i := 1; dec.More(); i++ {
		var line json.RawMessage
		if err := dec.Decode(&line); err != nil {
			return fmt.Errorf("log line %d: %w", i, err)
		}
		if err := each(line); err != nil {
			return fmt.Errorf("log line %d: %w", i, err)
		}
	}
	return nil
}
