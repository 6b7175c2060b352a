package protocol

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
)

const (
	aliceAddress = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"
	bobAddress   = "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty"
)

func TestValidatorAuth(t *testing.T) {
	t.Parallel()

	alice, err := hotkey.FromURI("//Alice")
	require.NoError(t, err)
	now := time.Unix(1740830400, 0)
	auth := NewValidatorAuth(alice, bobAddress, now)
	require.Equal(t, aliceAddress+":"+bobAddress+":1740830400", string(auth.Blob()))

	// The signed message survives the wire.
	frame, err := Encode(auth)
	require.NoError(t, err)
	decoded, err := DecodeFromValidator(frame)
	require.NoError(t, err)
	auth = decoded.(*ValidatorAuthForMiner)

	tampered := *auth
	tampered.Timestamp++

	tests := []struct {
		name  string
		auth  *ValidatorAuthForMiner
		miner string
		url   string
		now   time.Time
		want  error
	}{
		{name: "Valid", auth: auth, miner: bobAddress, url: aliceAddress, now: now},
		{name: "TenSecondsOld", auth: auth, miner: bobAddress, url: aliceAddress, now: now.Add(10 * time.Second)},
		{name: "TooOldByAFraction", auth: auth, miner: bobAddress, url: aliceAddress, now: now.Add(10*time.Second + time.Millisecond), want: ErrAuthTooOld},
		{name: "TooOld", auth: auth, miner: bobAddress, url: aliceAddress, now: now.Add(11 * time.Second), want: ErrAuthTooOld},
		{name: "WrongMiner", auth: auth, miner: aliceAddress, url: aliceAddress, now: now, want: ErrAuthWrongMiner},
		{name: "WrongURL", auth: auth, miner: bobAddress, url: bobAddress, now: now, want: ErrAuthWrongValidator},
		{name: "Tampered", auth: &tampered, miner: bobAddress, url: aliceAddress, now: now, want: hotkey.ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := tt.auth.Verify(tt.miner, tt.url, tt.now)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestValidatorInterfaceURL(t *testing.T) {
	t.Parallel()

	require.Equal(t, "ws://1.2.3.4:8000/v0.1/validator_interface/"+aliceAddress, ValidatorInterfaceURL("1.2.3.4", 8000, aliceAddress))
	require.Equal(t, "ws://[::1]:8000/v0.1/validator_interface/x", ValidatorInterfaceURL("::1", 8000, "x"))
}

func TestIsUnauthorized(t *testing.T) {
	t.Parallel()

	details := func(s string) *string { return &s }
	tests := []struct {
		name string
		msg  Message
		want bool
	}{
		{name: "UnauthorizedError", msg: &UnauthorizedError{Code: CodeTokenTooOld}, want: true},
		{name: "UnknownValidator", msg: &GenericError{Details: details("Unknown validator: 5Fvali")}, want: true},
		{name: "InactiveValidatorLowercase", msg: GenericError{Details: details("inactive validator: 5Fvali")}, want: true},
		{name: "NotAuthenticated", msg: &GenericError{Details: details("Validator 5F not authenticated due to: x")}},
		{name: "NilDetails", msg: &GenericError{}},
		{name: "OtherMessage", msg: &V0AcceptJobRequest{JobUUID: "u"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, IsUnauthorized(tt.msg))
		})
	}
}
