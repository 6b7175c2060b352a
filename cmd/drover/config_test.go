package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

func TestConfigPrecedence(t *testing.T) {
	t.Parallel()

	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte("token: from-file\noutput: json\nurls:\n  scorer: http://file:1/\n  miner-sync: http://file:2\n"), 0o600))
	env := map[string]string{"DROVER_CONFIG": file, "DROVER_TOKEN": "from-env", "DROVER_MINER_SYNC_URL": "http://env:3"}
	resolve := func(t *testing.T, args ...string) (config, error) {
		t.Helper()
		flags := pflag.NewFlagSet("drover", pflag.ContinueOnError)
		v := addGlobalFlags(flags)
		require.NoError(t, flags.Parse(args))
		return v.resolve(func(k string) string { return env[k] })
	}

	cfg, err := resolve(t)
	require.NoError(t, err)
	require.Equal(t, "from-env", cfg.token, "the environment over the file")
	require.Equal(t, "json", cfg.output, "the file over the default")
	require.Equal(t, "http://file:1", cfg.urls[scorer], "the file, its trailing slash cut")
	require.Equal(t, "http://env:3", cfg.urls[minerSync])
	require.Equal(t, "http://127.0.0.1:8084", cfg.urls[buildScheduler], "make run's address by default")

	cfg, err = resolve(t, "--token", "from-flag", "--miner-sync-url", "http://flag:4", "-o", "table")
	require.NoError(t, err)
	require.Equal(t, "from-flag", cfg.token)
	require.Equal(t, "http://flag:4", cfg.urls[minerSync])
	require.Equal(t, "table", cfg.output)

	_, err = resolve(t, "-o", "yaml")
	require.ErrorContains(t, err, "must be table or json")
	_, err = resolve(t, "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "config file", "a config file named but missing is an error")
}

func TestFormat(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		in   any
		want string
	}{
		{nil, "-"},
		{float64(42), "42"},
		{0.0227051, "0.0227051"},
		{map[string]any{"b": float64(2), "a": float64(1)}, "a=1 b=2"},
		{[]any{"x", "y"}, "x,y"},
		{"", "-"},
	} {
		require.Equal(t, tt.want, format(tt.in), "%v", tt.in)
	}
}
