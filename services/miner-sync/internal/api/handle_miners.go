package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"drover.dev/services/miner-sync/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// minerPage is one page of GET /v1/miners; NextCursor is empty on the last page.
type minerPage struct {
	Miners     []store.Miner `json:"miners"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

type minerCursor struct {
	UID    int    `json:"u"`
	Hotkey string `json:"h"`
}

func handleMinerList(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		f, err := minerFilter(c)
		if err != nil {
			return err
		}
		miners, err := store.MinerList(c.Request().Context(), db, f)
		if err != nil {
			return err
		}
		page := minerPage{Miners: miners}
		if page.Miners == nil {
			page.Miners = []store.Miner{}
		}
		if len(miners) == f.Limit {
			last := miners[len(miners)-1]
			b, _ := json.Marshal(minerCursor{UID: last.UID, Hotkey: last.Hotkey})
			page.NextCursor = base64.RawURLEncoding.EncodeToString(b)
		}
		return c.JSON(http.StatusOK, page)
	}
}

func minerFilter(c *echo.Context) (store.MinerFilter, error) {
	f := store.MinerFilter{Hotkey: c.QueryParam("hotkey"), Limit: defaultPageSize}
	var err error
	if f.Active, err = boolParam(c, "active"); err != nil {
		return f, err
	}
	if f.Validator, err = boolParam(c, "validator"); err != nil {
		return f, err
	}
	if f.Serving, err = boolParam(c, "serving"); err != nil {
		return f, err
	}
	if len(f.Hotkey) > 64 {
		return f, problem.Invalidf("hotkey", "must be at most 64 characters")
	}
	if f.Limit, err = limitParam(c, defaultPageSize, maxPageSize); err != nil {
		return f, err
	}
	if s := c.QueryParam("cursor"); s != "" {
		var cur minerCursor
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) > 256 || json.Unmarshal(b, &cur) != nil {
			return f, problem.Invalidf("cursor", "is not a cursor this service returned")
		}
		f.HasAfter, f.AfterUID, f.AfterHotkey = true, cur.UID, cur.Hotkey
	}
	return f, nil
}

func boolParam(c *echo.Context, name string) (*bool, error) {
	s := c.QueryParam(name)
	if s == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return nil, problem.Invalidf(name, "must be true or false, not %q", s)
	}
	return &b, nil
}

func limitParam(c *echo.Context, def, most int) (int, error) {
	s := c.QueryParam("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		return 0, problem.Invalidf("limit", "must be 1 to %d", most)
	}
	return n, nil
}
