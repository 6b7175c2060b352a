package protocol

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"drover.dev/computehorde/hotkey"
)

// AuthMaxAge is how old a ValidatorAuthForMiner timestamp may be when the miner checks it.
const AuthMaxAge = 10 * time.Second

var (
	// ErrAuthTooOld reports an auth message older than AuthMaxAge.
	ErrAuthTooOld = errors.New("auth message too old")
	// ErrAuthWrongMiner reports an auth message addressed to another miner.
	ErrAuthWrongMiner = errors.New("auth message for another miner")
	// ErrAuthWrongValidator reports an auth message whose validator is not the one in the URL.
	ErrAuthWrongValidator = errors.New("auth validator does not match url")
)

// ValidatorInterfaceURL is the websocket URL of a miner's validator interface.
func ValidatorInterfaceURL(minerIP string, minerPort int, validatorHotkey string) string {
	return "ws://" + net.JoinHostPort(minerIP, strconv.Itoa(minerPort)) + "/v0.1/validator_interface/" + validatorHotkey
}

// NewValidatorAuth builds and signs the validator's first frame for a miner.
func NewValidatorAuth(key *hotkey.Keypair, minerHotkey string, now time.Time) *ValidatorAuthForMiner {
	auth := &ValidatorAuthForMiner{
		ValidatorHotkey: key.Address(),
		MinerHotkey:     minerHotkey,
		Timestamp:       now.Unix(),
	}
	auth.Signature = key.Sign(auth.Blob())
	return auth
}

// Blob is the signed text: "{validator_hotkey}:{miner_hotkey}:{timestamp}".
func (m *ValidatorAuthForMiner) Blob() []byte {
	return fmt.Appendf(nil, "%s:%s:%d", m.ValidatorHotkey, m.MinerHotkey, m.Timestamp)
}

// Verify makes the miner's checks: fresh (timestamp ≥ now − AuthMaxAge), addressed to
// minerHotkey, from the validator named in the URL, and signed by it. Whether the validator
// may use the miner at all is the miner's policy, not checked here.
func (m *ValidatorAuthForMiner) Verify(minerHotkey, urlValidatorHotkey string, now time.Time) error {
	// Upstream compares with the fractional time.time(), so a timestamp of t is too old from
	// t + AuthMaxAge plus any fraction of a second; truncating now would accept it up to a
	// second longer than a real miner does.
	if time.Unix(m.Timestamp, 0).Before(now.Add(-AuthMaxAge)) {
		return fmt.Errorf("auth from %s at %d: %w", m.ValidatorHotkey, m.Timestamp, ErrAuthTooOld)
	}
	if m.MinerHotkey != minerHotkey {
		return fmt.Errorf("auth from %s for %s: %w", m.ValidatorHotkey, m.MinerHotkey, ErrAuthWrongMiner)
	}
	if m.ValidatorHotkey != urlValidatorHotkey {
		return fmt.Errorf("auth from %s, url %s: %w", m.ValidatorHotkey, urlValidatorHotkey, ErrAuthWrongValidator)
	}
	if err := hotkey.Verify(m.ValidatorHotkey, m.Blob(), m.Signature); err != nil {
		return fmt.Errorf("auth from %s: %w", m.ValidatorHotkey, err)
	}
	return nil
}

// IsUnauthorized reports whether a miner's message means the validator may not use it: an
// UnauthorizedError, or a GenericError whose details start with "unknown validator" or
// "inactive validator" in any case.
func IsUnauthorized(m Message) bool {
	switch m := m.(type) {
	case *UnauthorizedError, UnauthorizedError:
		return true
	case *GenericError:
		return m != nil && unauthorizedDetails(m.Details)
	case GenericError:
		return unauthorizedDetails(m.Details)
	}
	return false
}

func unauthorizedDetails(details *string) bool {
	if details == nil {
		return false
	}
	lower := strings.ToLower(*details)
	return strings.HasPrefix(lower, "unknown validator") || strings.HasPrefix(lower, "inactive validator")
}
