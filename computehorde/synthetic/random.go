package synthetic

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Alphabets passwords are drawn from. Upstream draws the "letters" of a password from letters
// and digits alike, which is why the hashcat masks use the custom charset ?l?d?u for them.
const (
	alphanumeric = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	digits       = "0123456789"
)

// randomSource buffers the caller's reader: a hashcat job needs about two thousand one-byte
// draws, and one read per draw would make crypto/rand dominate generation time.
type randomSource struct {
	r *bufio.Reader
}

// newRandomSource reads rnd in chunks of size bytes. It may read up to size bytes more than it
// hands out, so size should be about what one job draws.
func newRandomSource(rnd io.Reader, size int) randomSource {
	return randomSource{r: bufio.NewReaderSize(rnd, size)}
}

// fill fills b with random bytes.
func (s randomSource) fill(b []byte) error {
	if _, err := io.ReadFull(s.r, b); err != nil {
		return fmt.Errorf("read randomness: %w", err)
	}
	return nil
}

// appendString appends n characters drawn uniformly from alphabet. It rejects the bytes above
// the largest multiple of len(alphabet) so that no character is more likely than another.
func (s randomSource) appendString(dst []byte, alphabet string, n int) ([]byte, error) {
	limit := 256 - 256%len(alphabet)
	for range n {
		for {
			b, err := s.r.ReadByte()
			if err != nil {
				return dst, fmt.Errorf("read randomness: %w", err)
			}
			if int(b) < limit {
				dst = append(dst, alphabet[int(b)%len(alphabet)])
				break
			}
		}
	}
	return dst, nil
}

// uint64n returns a uniform integer in [0, n), n > 0, by rejection like appendString.
func (s randomSource) uint64n(n uint64) (uint64, error) {
	limit := ^uint64(0) - (^uint64(0)%n+1)%n
	var b [8]byte
	for {
		if err := s.fill(b[:]); err != nil {
			return 0, err
		}
		if v := binary.BigEndian.Uint64(b[:]); v <= limit {
			return v % n, nil
		}
	}
}
