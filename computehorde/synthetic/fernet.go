package synthetic

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Fernet token layout (https://github.com/fernet/spec): version, timestamp, IV, ciphertext and
// an HMAC over all of them.
const (
	fernetVersion  = 0x80
	fernetHeader   = 1 + 8 + aes.BlockSize
	fernetMACSize  = sha256.Size
	fernetKeySize  = 32
	fernetHalfSize = fernetKeySize / 2
)

// fernetKey is the 32 raw bytes behind a Fernet key: the signing key first, then the encryption
// key. Python's cryptography takes the urlsafe base64 of these bytes.
type fernetKey [fernetKeySize]byte

// fernetKeyFromSecret derives the key upstream uses for a hashcat stage: the urlsafe base64 of
// sha256(secret) is the Fernet key, so the raw key bytes are the digest itself.
func fernetKeyFromSecret(secret []byte) fernetKey {
	return sha256.Sum256(secret)
}

// encryptFernet returns the Fernet token of plaintext as Python's cryptography writes it: urlsafe
// base64 with padding. iv must be fresh random bytes; now is the token's creation time.
func encryptFernet(key fernetKey, iv [aes.BlockSize]byte, now time.Time, plaintext []byte) string {
	block, _ := aes.NewCipher(key[fernetHalfSize:]) // never fails: the key is 16 bytes
	padding := aes.BlockSize - len(plaintext)%aes.BlockSize
	size := fernetHeader + len(plaintext) + padding
	token := make([]byte, size, size+fernetMACSize)

	token[0] = fernetVersion
	binary.BigEndian.PutUint64(token[1:9], uint64(now.Unix()))
	copy(token[9:fernetHeader], iv[:])
	body := token[fernetHeader:]
	copy(body, plaintext)
	for i := len(plaintext); i < len(body); i++ {
		body[i] = byte(padding)
	}
	cipher.NewCBCEncrypter(block, iv[:]).CryptBlocks(body, body)

	mac := hmac.New(sha256.New, key[:fernetHalfSize])
	mac.Write(token)
	token = mac.Sum(token)
	return base64.URLEncoding.EncodeToString(token)
}
