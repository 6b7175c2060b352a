// Package signing authenticates populate-worker's calls to HTTP function makes, as webhook
// senders do: each call carries a Drover-Signature header, an HMAC-SHA256 over the time it was
// sent and its body, with a secret the worker and the function share. A function checks the
// signature and the time, so a caller without the secret, or a call replayed later, is refused.
//
// The header is "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">", with one v1 per
// secret: during a rotation the worker signs with the new and the old secret, and a function
// that knows either accepts the call.
package signing

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header is the request header that carries the signature.
const Header = "Drover-Signature"

// Tolerance is how far a call's signed time may be from the function's clock: older calls are
// refused as replays, and clocks of the worker and the function may differ by as much.
const Tolerance = 5 * time.Minute

var (
	// ErrUnsigned is a call without a Drover-Signature header.
	ErrUnsigned = errors.New("unsigned call: no " + Header + " header")
	// ErrBadSignature is a call whose header is malformed or signed with another secret.
	ErrBadSignature = errors.New("bad signature")
	// ErrStale is a call signed more than Tolerance away from now.
	ErrStale = errors.New("stale signature")
)

// Sign returns the Drover-Signature header value for body sent at t, signed with every secret.
func Sign(secrets []string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, s := range secrets {
		b.WriteString(",v1=" + hex.EncodeToString(mac(s, ts, body)))
	}
	return b.String()
}

func mac(secret, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks that header signs body with one of secrets, at a time within Tolerance of now.
func Verify(secrets []string, header string, body []byte, now time.Time) error {
	if header == "" {
		return ErrUnsigned
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%w: want t=<unix seconds>,v1=<hex>", ErrBadSignature)
	}
	if d := now.Sub(time.Unix(unix, 0)).Abs(); d > Tolerance {
		return fmt.Errorf("%w: signed %s away from now, more than %s", ErrStale, d.Truncate(time.Second), Tolerance)
	}
	for _, s := range secrets {
		want := mac(s, ts, body)
		for _, sig := range sigs {
			if hmac.Equal(sig, want) {
				return nil
			}
		}
	}
	return ErrBadSignature
}

// Keys picks the secrets a request is signed with; none leaves it unsigned.
type Keys func(req *http.Request) []string

// Static signs every request with secrets.
func Static(secrets []string) Keys {
	return func(*http.Request) []string { return secrets }
}

// Transport signs every request it sends with the secrets keys picks, then sends it with next.
func Transport(keys Keys, next http.RoundTripper) http.RoundTripper {
	return &transport{keys: keys, next: next, now: time.Now}
}

type transport struct {
	keys Keys
	next http.RoundTripper
	now  func() time.Time
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	secrets := t.keys(req)
	if len(secrets) == 0 {
		return t.next.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read body to sign: %w", err)
		}
	}
	signed := req.Clone(req.Context())
	signed.Body = io.NopCloser(bytes.NewReader(body))
	signed.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	signed.Header.Set(Header, Sign(secrets, t.now(), body))
	return t.next.RoundTrip(signed)
}

// Middleware refuses calls to next that are not signed with one of secrets (see Verify) with 401
// and a problem+json document; bodies above maxBody bytes get 413.
func Middleware(secrets []string, maxBody int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			problem(w, http.StatusRequestEntityTooLarge, "Request too large", err.Error())
			return
		}
		if err := Verify(secrets, r.Header.Get(Header), body, time.Now()); err != nil {
			problem(w, http.StatusUnauthorized, "Unauthorized", err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func problem(w http.ResponseWriter, status int, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", Header)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": title, "status": status, "detail": detail})
}
