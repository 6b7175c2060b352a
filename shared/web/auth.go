package web

import (
	"crypto/subtle"
	"strings"

	"github.com/labstack/echo/v5"

	"drover.dev/shared/problem"
)

// bearerAuth accepts a request whose Authorization header carries one of tokens. Comparison is
// constant time so a token cannot be guessed byte by byte.
func bearerAuth(tokens []string, disabled bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if disabled {
			return next
		}
		return func(c *echo.Context) error {
			got, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
			if !ok || got == "" {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="drover"`)
				return problem.New(problem.Unauthorized, "", "an Authorization: Bearer <token> header is required")
			}
			for _, want := range tokens {
				if subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 {
					return next(c)
				}
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="drover", error="invalid_token"`)
			return problem.New(problem.Unauthorized, "", "the bearer token is not valid")
		}
	}
}
