package hotkey

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultWalletDir is where Bittensor keeps wallets: <dir>/<wallet>/hotkeys/<hotkey>.
const DefaultWalletDir = "~/.bittensor/wallets"

// Settings name a validator hotkey the ways a Drover service's settings do, in order of
// precedence: a secret URI (//Alice for development), a wallet hotkey file, or ComputeHorde's
// wallet name and hotkey name under a folder of wallets in Bittensor's layout.
type Settings struct {
	Prefix       string // the service's environment prefix, for messages (BATCH_RUNNER_)
	URI          string // <Prefix>HOTKEY_URI
	Path         string // <Prefix>WALLET_PATH
	WalletName   string // BITTENSOR_WALLET_NAME
	WalletHotkey string // BITTENSOR_WALLET_HOTKEY_NAME; "default" when empty
	WalletDir    string // HOST_WALLET_DIR; DefaultWalletDir when empty
}

// Configured reports whether any of the settings names a hotkey.
func (s Settings) Configured() bool { return s.URI != "" || s.Path != "" || s.WalletName != "" }

// Load reads the hotkey the settings name; an error names the setting at fault.
func (s Settings) Load() (*Keypair, error) {
	switch {
	case s.URI != "":
		key, err := FromURI(s.URI)
		if err != nil {
			return nil, fmt.Errorf("%sHOTKEY_URI: %w", s.Prefix, err)
		}
		return key, nil
	case s.Path != "":
		key, err := LoadWallet(s.Path)
		if err != nil {
			return nil, fmt.Errorf("%sWALLET_PATH: %w", s.Prefix, err)
		}
		return key, nil
	case s.WalletName != "":
		path, err := WalletPath(s.WalletDir, s.WalletName, s.WalletHotkey)
		if err != nil {
			return nil, err
		}
		key, err := LoadWallet(path)
		if err != nil {
			return nil, fmt.Errorf("validator wallet HOST_WALLET_DIR/BITTENSOR_WALLET_NAME/hotkeys/BITTENSOR_WALLET_HOTKEY_NAME (%s): %w", path, err)
		}
		return key, nil
	}
	return nil, fmt.Errorf("no validator hotkey: set %sHOTKEY_URI (e.g. //Alice for development), %sWALLET_PATH, or BITTENSOR_WALLET_NAME (+ BITTENSOR_WALLET_HOTKEY_NAME, HOST_WALLET_DIR)", s.Prefix, s.Prefix)
}

// WalletPath is the hotkey file named the way ComputeHorde names it: wallet and hot (default
// "default", as Bittensor's) under dir (DefaultWalletDir when empty; ~/ is the home folder).
func WalletPath(dir, wallet, hot string) (string, error) {
	if hot == "" {
		hot = "default"
	}
	for name, v := range map[string]string{"BITTENSOR_WALLET_NAME": wallet, "BITTENSOR_WALLET_HOTKEY_NAME": hot} {
		if v == "" || v == "." || v == ".." || strings.ContainsAny(v, `/\`) || strings.ContainsRune(v, 0) {
			return "", fmt.Errorf("%s: %q is not a wallet name (no path separators)", name, v)
		}
	}
	if dir == "" {
		dir = DefaultWalletDir
	}
	if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errors.Join(errors.New("HOST_WALLET_DIR: ~ has no home directory"), err)
		}
		dir = filepath.Join(home, rest)
	}
	return filepath.Join(dir, wallet, "hotkeys", hot), nil
}
