package metagraph

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// HTTPSource fetches the metagraph with GET from a URL.
type HTTPSource struct {
	URL        string
	Timeout    time.Duration // whole request, body included
	MaxBytes   int64
	MaxEntries int
	Client     *http.Client // http.DefaultClient's transport when nil
}

// Fetch GETs the URL within Timeout and decodes at most MaxBytes of the answer.
func (s *HTTPSource) Fetch(ctx context.Context) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	body, err := getBounded(ctx, s.Client, s.URL, "", s.MaxBytes)
	if err != nil {
		return Snapshot{}, err
	}
	defer body.Close()
	return Decode(body, s.MaxBytes, s.MaxEntries)
}

// String is the URL without credentials or query (which might carry a token).
func (s *HTTPSource) String() string { return redactURL(s.URL) }

// getBounded GETs rawURL (with a bearer token when one is given) and returns the body of a 200
// answer, refusing one that announces more than maxBytes. The caller still bounds its reading,
// since a body need not announce its length, and closes it.
func getBounded(ctx context.Context, client *http.Client, rawURL, token string, maxBytes int64) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("metagraph request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get metagraph: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("get metagraph: status %d", resp.StatusCode)
	}
	if resp.ContentLength > maxBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d", ErrTooLarge, resp.ContentLength, maxBytes)
	}
	return resp.Body, nil
}

// redactURL drops credentials, query and fragment, which might carry a token.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "http (unparsable url)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
