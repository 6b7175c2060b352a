package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
)

// aliceSeed is //Alice's secret seed, as a btcli hotkey file holds it.
const aliceSeed = `{"secretSeed": "0xe5be9a5092b81bca64be81d212e7f2f9eba183bb7a90954f7b76361f6edb5c0a"}`

const aliceSS58 = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"

func TestLoadHotkeyFromComputeHordeWalletSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "validator", "hotkeys"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "validator", "hotkeys", "default"), []byte(aliceSeed), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "validator", "hotkeys", "second"), []byte(aliceSeed), 0o600))

	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"DefaultHotkey", Config{WalletName: "validator", WalletDir: dir}, ""},
		{"NamedHotkey", Config{WalletName: "validator", WalletHotkey: "second", WalletDir: dir}, ""},
		{"MissingHotkey", Config{WalletName: "validator", WalletHotkey: "nope", WalletDir: dir}, "HOST_WALLET_DIR/BITTENSOR_WALLET_NAME/hotkeys/BITTENSOR_WALLET_HOTKEY_NAME"},
		{"PathInName", Config{WalletName: "../validator", WalletDir: dir}, "BITTENSOR_WALLET_NAME: \"../validator\" is not a wallet name"},
		{"PathInHotkey", Config{WalletName: "validator", WalletHotkey: "..", WalletDir: dir}, "BITTENSOR_WALLET_HOTKEY_NAME"},
		{"NothingSet", Config{WalletDir: dir}, "no validator hotkey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key, err := loadHotkey(tt.cfg)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, aliceSS58, key.Address())
		})
	}
}

func TestWalletPathDefaultsToBittensorsFolder(t *testing.T) {
	t.Parallel()
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	path, err := hotkey.WalletPath(hotkey.DefaultWalletDir, "validator", "default")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(home, ".bittensor", "wallets", "validator", "hotkeys", "default"), path)
}

func TestCheckNamesEveryProblem(t *testing.T) {
	t.Parallel()
	cfg := Config{
		HTTPAddr: ":8082", Generators: "*=gpu-magic", JobTimeout: 15 * time.Minute, RescueAfter: time.Minute,
		ShardWorkers: 2, ShardPoll: 25 * time.Millisecond, SendMargin: 250 * time.Millisecond,
		Lease: 100 * time.Millisecond, LeaseSweep: 10 * time.Second,
	}
	got := errors.Join(cfg.Check()...)
	for _, want := range []string{"no validator hotkey", "BATCH_RUNNER_GENERATORS", "BATCH_RUNNER_RESCUE_AFTER", "BATCH_RUNNER_LEASE"} {
		require.ErrorContains(t, got, want)
	}
	cfg.HotkeyURI, cfg.Generators, cfg.RescueAfter, cfg.Lease = "//Alice", "*=pow", 0, 20*time.Second
	require.Empty(t, cfg.Check())
}
