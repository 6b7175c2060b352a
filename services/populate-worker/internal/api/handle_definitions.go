package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

// Admin is who may define and retire computed tables (PUT and DELETE /v1/tables/{name}): the
// admin scope. A token of API_TOKENS has the enqueue scope (schedule, populate, reschedule...)
// and gets 403 there; a token of ADMIN_TOKENS has the admin scope only, unless it is listed in
// both. With auth disabled every request has both.
type Admin struct {
	Tokens    []string // ADMIN_TOKENS
	APITokens []string // API_TOKENS, told apart from an unknown token: 403, not 401
	Disabled  bool     // AUTH_DISABLED
}

// adminOnly lets through a request whose bearer token is an admin token. The admin routes are
// outside /v1's group, whose middleware accepts API_TOKENS only, so this is their only check.
func adminOnly(a Admin) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if a.Disabled {
			return next
		}
		return func(c *echo.Context) error {
			token, ok := web.BearerToken(c.Request().Header.Get(echo.HeaderAuthorization))
			switch {
			case !ok:
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="drover"`)
				return problem.New(problem.Unauthorized, "", "an Authorization: Bearer <token> header is required")
			case web.OneOf(token, a.Tokens):
				return next(c)
			case web.OneOf(token, a.APITokens):
				return forbidden(c, "this token may enqueue work but not define or retire tables: "+
					"that takes a token of POPULATE_WORKER_ADMIN_TOKENS (the admin scope)")
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="drover", error="invalid_token"`)
			return problem.New(problem.Unauthorized, "", "the bearer token is not valid")
		}
	}
}

// forbidden answers 403 with a problem document as the server's error handler writes them (the
// shared problem codes have no 403: only this route refuses a valid token).
func forbidden(c *echo.Context, detail string) error {
	c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
	return c.JSON(http.StatusForbidden, web.Problem{
		Type: "https://drover.dev/problems/forbidden", Title: http.StatusText(http.StatusForbidden),
		Status: http.StatusForbidden, Detail: detail, Instance: c.Request().URL.Path,
		RequestID: c.Response().Header().Get(echo.HeaderXRequestID),
	})
}

// tableRequest is PUT /v1/tables/{name}: a definition as a tables file entry holds one. name
// may be left out; given, it must be the path's.
type tableRequest struct {
	Name              *string  `json:"name"`
	Target            string   `json:"target"`
	PrimaryKey        []string `json:"primary_key"`
	KeySource         string   `json:"key_source"`
	Upstream          []string `json:"upstream"`
	FunctionURL       string   `json:"function_url"`
	FunctionSecretEnv string   `json:"function_secret_env"`
	AutoSchedule      *bool    `json:"auto_schedule"`
}

// handleTablePut defines a computed table, or replaces its definition: 201 with the table when
// it is new, 200 when it replaced one.
func handleTablePut(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		var req tableRequest
		if err := web.DecodeJSON(c, &req); err != nil {
			return err
		}
		name := c.Param("name")
		if req.Name != nil && *req.Name != name {
			return problem.Unprocessablef("name", "the body names table %q, the path %q", *req.Name, name)
		}
		t, created, err := e.PutTable(c.Request().Context(), populate.Table{
			Name: name, Target: req.Target, PrimaryKey: req.PrimaryKey, KeySource: req.KeySource, Upstream: req.Upstream,
			FunctionURL: req.FunctionURL, FunctionSecretEnv: req.FunctionSecretEnv, AutoSchedule: req.AutoSchedule,
		})
		if err != nil {
			return err
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		return c.JSON(status, viewOf(t))
	}
}

func handleTableGet(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		t, err := e.Table(c.Request().Context(), c.Param("name"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, viewOf(t))
	}
}

// handleTableDelete retires a computed table: 204. Its jobs, runs and rows stay readable.
func handleTableDelete(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if err := e.RetireTable(c.Request().Context(), c.Param("name")); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	}
}
