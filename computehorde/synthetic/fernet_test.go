package synthetic

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// decryptFernet checks a token's version, HMAC and padding and returns its plaintext and
// timestamp. It is the test's independent reading of the Fernet spec.
func decryptFernet(key fernetKey, token string) ([]byte, time.Time, error) {
	raw, err := base64.URLEncoding.DecodeString(token)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("decode token: %w", err)
	}
	if len(raw) < fernetHeader+aes.BlockSize+fernetMACSize || raw[0] != fernetVersion {
		return nil, time.Time{}, errors.New("malformed token")
	}
	signed, tag := raw[:len(raw)-fernetMACSize], raw[len(raw)-fernetMACSize:]
	mac := hmac.New(sha256.New, key[:16])
	mac.Write(signed)
	if !hmac.Equal(mac.Sum(nil), tag) {
		return nil, time.Time{}, errors.New("bad hmac")
	}
	body := bytes.Clone(signed[fernetHeader:])
	if len(body)%aes.BlockSize != 0 {
		return nil, time.Time{}, errors.New("ciphertext not whole blocks")
	}
	block, err := aes.NewCipher(key[16:])
	if err != nil {
		return nil, time.Time{}, err
	}
	cipher.NewCBCDecrypter(block, signed[9:fernetHeader]).CryptBlocks(body, body)
	pad := int(body[len(body)-1])
	if pad < 1 || pad > aes.BlockSize || !bytes.Equal(body[len(body)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, time.Time{}, errors.New("bad padding")
	}
	stamp := time.Unix(int64(binary.BigEndian.Uint64(signed[1:9])), 0)
	return body[:len(body)-pad], stamp, nil
}

func TestEncryptFernet(t *testing.T) {
	t.Parallel()

	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	key := fernetKeyFromSecret([]byte("5Fminer-secret"))
	iv := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

	t.Run("matches the spec's generate vector", func(t *testing.T) {
		t.Parallel()
		// From the Fernet spec's generate.json.
		rawKey, err := base64.URLEncoding.DecodeString("cw_0x689RpI-jtRR7oE8h_eQsKImvJapLeSbXpwF4e4=")
		require.NoError(t, err)
		specNow, err := time.Parse(time.RFC3339, "1985-10-26T01:20:00-07:00")
		require.NoError(t, err)
		specIV := [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
		got := encryptFernet(fernetKey(rawKey), specIV, specNow, []byte("hello"))
		require.Equal(t, "gAAAAAAdwJ6wAAECAwQFBgcICQoLDA0ODy021cpGVWKZ_eEwCGM4BLLF_5CV9dOPmrhuVUPgJobwOz7JcbmrR64jVmpU4IwqDA==", got)
	})

	for _, size := range []int{0, 1, 15, 16, 17, 1000} {
		t.Run(fmt.Sprintf("round trip of %d bytes", size), func(t *testing.T) {
			t.Parallel()
			plaintext := bytes.Repeat([]byte{'x'}, size)
			token := encryptFernet(key, iv, now, plaintext)
			require.True(t, strings.HasPrefix(token, "gAAAAA"), "version byte 0x80 and a 2025 timestamp")
			got, stamp, err := decryptFernet(key, token)
			require.NoError(t, err)
			require.Equal(t, plaintext, got)
			require.True(t, now.Equal(stamp))
		})
	}

	t.Run("other key fails the hmac", func(t *testing.T) {
		t.Parallel()
		token := encryptFernet(key, iv, now, []byte("payload"))
		_, _, err := decryptFernet(fernetKeyFromSecret([]byte("5Fminer-secreT")), token)
		require.ErrorContains(t, err, "bad hmac")
	})
}

// fernetCheckPy verifies a token with the standard library alone (structure and HMAC) and, when
// the cryptography package is present, decrypts it with the Fernet upstream uses.
const fernetCheckPy = `
import base64, hashlib, hmac, json, os, sys
key = base64.urlsafe_b64encode(hashlib.sha256(os.environ["SECRET"].encode()).digest())
token = sys.stdin.read().strip()
raw = base64.urlsafe_b64decode(token)
assert raw[0] == 0x80 and (len(raw) - 57) % 16 == 0, "structure"
raw_key = base64.urlsafe_b64decode(key)
tag = hmac.new(raw_key[:16], raw[:-32], hashlib.sha256).digest()
assert hmac.compare_digest(tag, raw[-32:]), "hmac"
out = {"timestamp": int.from_bytes(raw[1:9], "big"), "iv": raw[9:25].hex()}
try:
    from cryptography.fernet import Fernet
except ImportError:
    pass
else:
    out["plaintext"] = Fernet(key).decrypt(token).decode()
print(json.dumps(out))
`

func TestEncryptFernetPython(t *testing.T) {
	t.Parallel()

	lookPython(t)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	iv := [16]byte{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf}
	const secret = "5Fminer-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefgh"
	plaintext := "0a1b:00ff\n2c3d:00ff"
	token := encryptFernet(fernetKeyFromSecret([]byte(secret)), iv, now, []byte(plaintext))

	out := runPython(t, fernetCheckPy, []byte(token), "SECRET="+secret)
	want := fmt.Sprintf(`{"timestamp": %d, "iv": %q`, now.Unix(), hex.EncodeToString(iv[:]))
	if pythonHasCryptography(t) {
		want += fmt.Sprintf(`, "plaintext": %q}`, plaintext)
	} else {
		t.Log("cryptography not installed: python checked structure and HMAC only")
		want += "}"
	}
	require.JSONEq(t, want, out)
}
