package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// defaultWalletDir is where Bittensor keeps wallets: <dir>/<wallet>/hotkeys/<hotkey>.
const defaultWalletDir = "~/.bittensor/wallets"

// walletPath is the hotkey file named the way ComputeHorde names it: BITTENSOR_WALLET_NAME and
// BITTENSOR_WALLET_HOTKEY_NAME (default "default", as Bittensor's) under HOST_WALLET_DIR. Empty
// when no wallet name is set.
func walletPath(cfg Config) (string, error) {
	if cfg.WalletName == "" {
		return "", nil
	}
	hot := cfg.WalletHotkey
	if hot == "" {
		hot = "default"
	}
	for name, v := range map[string]string{"BITTENSOR_WALLET_NAME": cfg.WalletName, "BITTENSOR_WALLET_HOTKEY_NAME": hot} {
		if v == "." || v == ".." || strings.ContainsAny(v, `/\`) || strings.ContainsRune(v, 0) {
			return "", fmt.Errorf("%s: %q is not a wallet name (no path separators)", name, v)
		}
	}
	dir := cfg.WalletDir
	if dir == "" {
		dir = defaultWalletDir
	}
	if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errors.Join(errors.New("HOST_WALLET_DIR: ~ has no home directory"), err)
		}
		dir = filepath.Join(home, rest)
	}
	return filepath.Join(dir, cfg.WalletName, "hotkeys", hot), nil
}
