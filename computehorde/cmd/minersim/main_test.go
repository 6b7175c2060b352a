package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
)

// TestRun starts the program, reads its control URL, checks the metagraph and stops it as
// SIGINT would.
func TestRun(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-miners", "3", "-classes", "always_on.test=2", "-base-ip", "127.0.9.2"}, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan())
	control, ok := strings.CutPrefix(lines.Text(), "minersim: control ")
	require.True(t, ok, lines.Text())
	require.True(t, lines.Scan())
	require.Contains(t, lines.Text(), "3 miners (127.0.9.2:")
	require.Contains(t, lines.Text(), "6 executors")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, control+"/metagraph", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var g minersim.Metagraph
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&g))
	resp.Body.Close()
	require.Len(t, g.Miners, 3+len(minersim.DefaultValidators()))

	cancel()
	for lines.Scan() {
	}
	require.NoError(t, <-done)
}

func TestParseFlags(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, cfg config)
		err   string
	}{
		{"classes in order", []string{"-classes", "spin_up-4min.gpu-24gb=2,always_on.test=5"}, func(t *testing.T, cfg config) {
			require.Equal(t, protocol.Manifest{{Class: "spin_up-4min.gpu-24gb", Count: 2}, {Class: "always_on.test", Count: 5}}, cfg.Manifest)
		}, ""},
		{"validators", []string{"-validators", "//Alice=100000,//Bob=10:inactive"}, func(t *testing.T, cfg config) {
			require.Equal(t, []minersim.Validator{{URI: "//Alice", Stake: 100000}, {URI: "//Bob", Stake: 10, Inactive: true}}, cfg.Validators)
		}, ""},
		{"behaviours", []string{"-behaviour", "3:decline=busy_valid", "-behaviour", "*:answer_delay=1s"}, func(t *testing.T, cfg config) {
			require.Equal(t, minersim.DeclineBusyValid, cfg.Scenario.ForMiner(3).Decline)
			require.NotZero(t, cfg.Scenario.ForMiner(0).AnswerDelay)
		}, ""},
		{"zero count", []string{"-classes", "always_on.test=0"}, nil, "positive count"},
		{"bad behaviour", []string{"-behaviour", "3:answer=maybe"}, nil, "unknown answer"},
		{"bad ip", []string{"-base-ip", "localhost"}, nil, "-base-ip"},
		{"missing scenario", []string{"-scenario", "/nonexistent.json"}, nil, "read scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			cfg, err := parseFlags(tt.args, io.Discard)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			tt.check(t, cfg)
		})
	}
}

// TestHelpDocumentsEveryBehaviour fails when a Behaviour field or a decline kind is added
// without a line in -help.
func TestHelpDocumentsEveryBehaviour(t *testing.T) {
	t.Parallel()

	var out bytes.Buffer
	_, err := parseFlags([]string{"-help"}, &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	help := out.String()
	fields := reflect.TypeFor[minersim.Behaviour]()
	for i := range fields.NumField() {
		name, _, _ := strings.Cut(fields.Field(i).Tag.Get("json"), ",")
		require.Contains(t, help, "  "+name+"=", "behaviour key %s", name)
	}
	for _, kind := range minersim.DeclineKinds() {
		require.Contains(t, help, kind)
	}
	for _, answer := range []string{minersim.AnswerSolve, minersim.AnswerWrong, minersim.AnswerFail, minersim.AnswerHordeFailed, minersim.AnswerScripted} {
		require.Contains(t, help, answer)
	}
}
