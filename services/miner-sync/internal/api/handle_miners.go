package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"drover.dev/services/miner-sync/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

// minerCursor is the sort key of GET /v1/miners: miners by uid, then hotkey.
type minerCursor struct {
	UID    int    `json:"u"`
	Hotkey string `json:"h"`
}

func handleMinerList(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p, err := web.ParseListParams(c)
		if err != nil {
			return err
		}
		f, err := minerFilter(c, p)
		if err != nil {
			return err
		}
		miners, err := store.MinerList(c.Request().Context(), db, f)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, web.NewPage(miners, p, func(m store.Miner) any {
			return minerCursor{UID: m.UID, Hotkey: m.Hotkey}
		}))
	}
}

func minerFilter(c *echo.Context, p web.ListParams) (store.MinerFilter, error) {
	f := store.MinerFilter{Hotkey: c.QueryParam("hotkey"), Limit: p.Limit}
	var err error
	if f.Active, err = web.QueryBool(c, "active"); err != nil {
		return f, err
	}
	if f.Validator, err = web.QueryBool(c, "validator"); err != nil {
		return f, err
	}
	if f.Serving, err = web.QueryBool(c, "serving"); err != nil {
		return f, err
	}
	if len(f.Hotkey) > 64 {
		return f, problem.Invalidf("hotkey", "must be at most 64 characters")
	}
	var cur minerCursor
	if f.HasAfter, err = p.After(&cur); err != nil {
		return f, err
	}
	f.AfterUID, f.AfterHotkey = cur.UID, cur.Hotkey
	return f, nil
}
