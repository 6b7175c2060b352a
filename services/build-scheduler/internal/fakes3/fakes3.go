// Package fakes3 serves the S3 protocol from memory on a loopback port for tests (gofakes3 with
// its memory backend), so the S3 log store is tested through the real client speaking real S3
// over HTTP. gofakes3 itself ignores authentication; this server checks every request's SigV4
// signature against its key pair first, as a real service does, so credentials that are wired
// wrong fail in tests too.
package fakes3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"
)

// Server is a running fake S3 service holding one empty bucket.
type Server struct {
	URL       string // endpoint, e.g. http://127.0.0.1:40123; buckets are addressed path-style
	Bucket    string
	Region    string
	AccessKey string
	SecretKey string
}

// Start serves a fake S3 service until the test ends.
func Start(t testing.TB) Server {
	t.Helper()
	s := unstarted()
	backend := s3mem.New()
	require.NoError(t, backend.CreateBucket(s.Bucket))
	srv := httptest.NewServer(s.verify(gofakes3.New(backend).Server()))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Unreachable returns the settings of a service that is not there: nothing listens at its URL,
// so every request is refused.
func Unreachable(t testing.TB) Server {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := unstarted()
	s.URL = "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	return s
}

func unstarted() Server {
	return Server{Bucket: "build-logs", Region: "us-east-1", AccessKey: "drover-test", SecretKey: "drover-test-secret"}
}

// verify passes on requests signed for the server's key pair and region and answers the rest
// 403 SignatureDoesNotMatch.
func (s Server) verify(next http.Handler) http.Handler {
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	creds := aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.checkSignature(r, signer, creds); err != nil {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_ = xml.NewEncoder(w).Encode(struct {
				XMLName xml.Name `xml:"Error"`
				Code    string
				Message string
			}{Code: "SignatureDoesNotMatch", Message: err.Error()})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkSignature signs a copy of r (its method, URL and the headers it says it signed) with the
// server's credentials at the time r says it was signed, and compares the two Authorization
// headers: any difference in key, secret, region or signed content shows.
func (s Server) checkSignature(r *http.Request, signer *v4.Signer, creds aws.Credentials) error {
	auth := r.Header.Get("Authorization")
	params, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return errors.New("request is not signed with AWS4-HMAC-SHA256")
	}
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %w", err)
	}
	u, err := url.Parse("http://" + r.Host + r.RequestURI)
	if err != nil {
		return fmt.Errorf("request URI: %w", err)
	}
	again, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), nil)
	if err != nil {
		return fmt.Errorf("copy request: %w", err)
	}
	for _, f := range strings.Split(params, ",") {
		if names, ok := strings.CutPrefix(strings.TrimSpace(f), "SignedHeaders="); ok {
			copySignedHeaders(again, r, strings.Split(names, ";"))
		}
	}
	payloadHash := r.Header.Get("X-Amz-Content-Sha256")
	if err := signer.SignHTTP(r.Context(), creds, again, payloadHash, "s3", s.Region, signedAt); err != nil {
		return fmt.Errorf("sign copy: %w", err)
	}
	if got := again.Header.Get("Authorization"); got != auth {
		return fmt.Errorf("signature does not match: got %q, want %q", auth, got)
	}
	return nil
}

// copySignedHeaders gives again the headers of r named in names. Host and Content-Length are
// not headers to the signer but fields of the request.
func copySignedHeaders(again, r *http.Request, names []string) {
	for _, name := range names {
		switch name {
		case "host":
		case "content-length":
			again.ContentLength = r.ContentLength
		default:
			again.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
}
