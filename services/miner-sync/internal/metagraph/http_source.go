package metagraph

import (
	"context"
	"fmt"
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return Snapshot{}, fmt.Errorf("metagraph request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	client := s.Client
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(req)
	if err != nil {
		return Snapshot{}, fmt.Errorf("get metagraph: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("get metagraph: status %d", resp.StatusCode)
	}
	if resp.ContentLength > s.MaxBytes {
		return Snapshot{}, fmt.Errorf("%w: %d bytes announced, at most %d", ErrTooLarge, resp.ContentLength, s.MaxBytes)
	}
	return Decode(resp.Body, s.MaxBytes, s.MaxEntries)
}

// String is the URL without credentials or query (which might carry a token).
func (s *HTTPSource) String() string {
	u, err := url.Parse(s.URL)
	if err != nil {
		return "http (unparsable url)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
