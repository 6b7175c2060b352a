package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/labstack/echo/v5"

	"drover.dev/shared/problem"
)

// Every list of every service reads the same parameters and answers the same envelope:
//
//	GET /v1/things?limit=100&cursor=...  →  {"items": [...], "next_cursor": "..."}
//
// limit is 1 to MaxLimit (DefaultLimit when absent); next_cursor is absent on the last page and
// otherwise passed back as ?cursor= for the next one. A cursor is opaque to clients: it encodes
// the sort key of the last item of its page, which the handler reads back with ListParams.After.

// The bounds of ?limit=.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Page is one page of a list.
type Page[T any] struct {
	Items []T `json:"items"`
	// NextCursor is the cursor of the next page, absent on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// NewPage is the page holding items, read with limit p.Limit: when the page is full, its next
// cursor encodes key(last item), the sort key the next page starts after.
func NewPage[T any](items []T, p ListParams, key func(T) any) Page[T] {
	page := OnePage(items)
	if len(items) > 0 && len(items) >= p.Limit {
		b, err := json.Marshal(key(items[len(items)-1]))
		if err != nil {
			panic("encode a cursor: " + err.Error()) // keys are ids, strings and structs of them
		}
		page.NextCursor = base64.RawURLEncoding.EncodeToString(b)
	}
	return page
}

// OnePage is a list answered whole: items and no next cursor.
func OnePage[T any](items []T) Page[T] {
	if items == nil {
		items = []T{}
	}
	return Page[T]{Items: items}
}

// ListParams are the paging parameters of a list request.
type ListParams struct {
	Limit  int
	cursor []byte // the decoded cursor; nil for the first page
}

// ParseListParams reads ?limit= and ?cursor=.
func ParseListParams(c *echo.Context) (ListParams, error) {
	p := ListParams{Limit: DefaultLimit}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit || strconv.Itoa(n) != s {
			return p, problem.Invalidf("limit", "must be an integer from 1 to %d, not %q", MaxLimit, s)
		}
		p.Limit = n
	}
	if s := c.QueryParam("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) > 1024 || !json.Valid(b) {
			return p, problem.Invalidf("cursor", "is not a cursor this API returned")
		}
		if err := CheckJSON("cursor", b); err != nil {
			return p, err
		}
		p.cursor = b
	}
	return p, nil
}

// After decodes the cursor into key (a pointer to the type NewPage's key returned) and reports
// whether there is one: false on the first page.
func (p ListParams) After(key any) (bool, error) {
	if p.cursor == nil {
		return false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(p.cursor))
	dec.DisallowUnknownFields()
	if err := dec.Decode(key); err != nil {
		return false, problem.Invalidf("cursor", "is not a cursor this API returned")
	}
	return true, nil
}

// ParseIDListParams is ParseListParams for a list sorted by id, whose cursor is the id the page
// starts after (0 on the first page).
func ParseIDListParams(c *echo.Context) (ListParams, int64, error) {
	p, err := ParseListParams(c)
	if err != nil {
		return p, 0, err
	}
	var id int64
	ok, err := p.After(&id)
	if err == nil && ok && id <= 0 {
		// Ids are positive: a cursor of 0, a negative id or null was not returned by this API.
		return p, 0, problem.Invalidf("cursor", "is not a cursor this API returned")
	}
	return p, id, err
}

// QueryID reads the optional query parameter name as an id in canonical decimal; 0 when absent.
func QueryID(c *echo.Context, name string) (int64, error) {
	s := c.QueryParam(name)
	if s == "" {
		return 0, nil
	}
	return ParseID(name, s)
}

// QueryBool reads the optional query parameter name as exactly true or false; nil when absent,
// so the caller chooses the default. Any other value (1, TRUE, yes) is a 400 naming the
// parameter: follow=1 silently meaning false would answer a different request than the one asked.
func QueryBool(c *echo.Context, name string) (*bool, error) {
	switch s := c.QueryParam(name); s {
	case "":
		return nil, nil
	case "true", "false":
		b := s == "true"
		return &b, nil
	default:
		return nil, problem.Invalidf(name, "must be true or false, not %q", s)
	}
}
