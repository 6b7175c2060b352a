package hotkey

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

var (
	// ErrEncryptedWallet reports a wallet file encrypted by btcli. Hotkeys are normally stored in
	// the clear; decrypting coldkey-style files is not supported.
	ErrEncryptedWallet = errors.New("encrypted wallet file")

	// ErrWalletMismatch reports a wallet file whose stored public key or address does not match
	// the key derived from its secret, a sign of a corrupted or hand-edited file.
	ErrWalletMismatch = errors.New("wallet public key does not match its secret")
)

// walletFile is the JSON btcli writes to ~/.bittensor/wallets/<wallet>/hotkeys/<hotkey>.
type walletFile struct {
	AccountID    string `json:"accountId"`
	PublicKey    string `json:"publicKey"`
	SecretPhrase string `json:"secretPhrase"`
	SecretSeed   string `json:"secretSeed"`
	SS58Address  string `json:"ss58Address"`
}

// LoadWallet reads a Bittensor wallet hotkey file, for example
// ~/.bittensor/wallets/validator/hotkeys/default.
func LoadWallet(path string) (*Keypair, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read wallet: %w", err)
	}
	key, err := ParseWallet(data)
	if err != nil {
		return nil, fmt.Errorf("wallet %s: %w", path, err)
	}
	return key, nil
}

// ParseWallet builds a keypair from the contents of a wallet hotkey file. It uses secretSeed,
// or secretPhrase when the seed is absent, and checks the result against the stored publicKey,
// accountId and ss58Address when present.
func ParseWallet(data []byte) (*Keypair, error) {
	if strings.HasPrefix(string(data), "$NACL") || strings.HasPrefix(string(data), "$ANSIBLE_VAULT") {
		return nil, ErrEncryptedWallet
	}
	var file walletFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("parse wallet json: %w", err)
	}
	key, err := file.keypair()
	if err != nil {
		return nil, err
	}
	if err := file.check(key.PublicKey()); err != nil {
		return nil, err
	}
	return key, nil
}

// keypair derives the key from the seed, or from the phrase when there is no seed.
func (f walletFile) keypair() (*Keypair, error) {
	switch {
	case f.SecretSeed != "":
		mini, err := miniSecretFromHex(f.SecretSeed)
		if err != nil {
			return nil, fmt.Errorf("secretSeed: %w", err)
		}
		return fromSecret(mini.ExpandEd25519())
	case f.SecretPhrase != "":
		return FromURI(f.SecretPhrase)
	default:
		return nil, fmt.Errorf("%w: no secretSeed or secretPhrase", ErrInvalidURI)
	}
}

// check compares the stored public parts with the derived key.
func (f walletFile) check(key PublicKey) error {
	for _, stored := range []string{f.PublicKey, f.AccountID} {
		if stored == "" {
			continue
		}
		raw, err := hex.DecodeString(strings.TrimPrefix(stored, "0x"))
		if err != nil || string(raw) != string(key[:]) {
			return fmt.Errorf("%w: stored %s, derived %s", ErrWalletMismatch, stored, key.Hex())
		}
	}
	if f.SS58Address != "" && f.SS58Address != key.Address() {
		return fmt.Errorf("%w: stored %s, derived %s", ErrWalletMismatch, f.SS58Address, key.Address())
	}
	return nil
}
