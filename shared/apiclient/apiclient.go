// Package apiclient is the small JSON-over-HTTP client Drover's command-line programs (the demos)
// use to call a service's /v1 API the way a user would: JSON in, bearer token, JSON out, and the
// service's problem answer in the error when the status is not a success.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"drover.dev/shared/web"
)

// Page is one page of a Drover list: {"items": [...], "next_cursor": "..."}; pass NextCursor back
// as ?cursor= for the next page.
type Page[T any] = web.Page[T]

// maxBody bounds how much of an answer is read: demos read summaries, never bulk data.
const maxBody = 8 << 20

// Client calls a service's API.
type Client struct {
	Token string       // bearer token; none is sent when empty
	HTTP  *http.Client // http.DefaultClient when nil
}

// StatusError is an answer whose status is not a success. Body is what the service said,
// usually an RFC 9457 problem.
type StatusError struct {
	Method, URL string
	Status      int
	Body        string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.URL, e.Status, http.StatusText(e.Status), e.Body)
}

// Do sends body (when not nil) as JSON to url and decodes a 2xx answer into out (when not nil).
// It returns the status; any other status is a *StatusError.
func (c Client) Do(ctx context.Context, method, url string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("encode %s %s: %w", method, url, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("read %s %s: %w", method, url, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, &StatusError{Method: method, URL: url, Status: resp.StatusCode, Body: string(bytes.TrimSpace(raw))}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s %s: %w", method, url, err)
		}
	}
	return resp.StatusCode, nil
}

// Answers reports whether a GET of url (a service's /readyz, say) answers 200; an error, or any
// other status, is a no. For waiting until a service started, as the demos and tests do.
func Answers(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
