package web

import (
	"crypto/subtle"
	"fmt"
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
			got, ok := BearerToken(c.Request().Header.Get(echo.HeaderAuthorization))
			if !ok {
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

// BearerToken returns the token of an Authorization header value of the Bearer scheme. The scheme
// is matched case-insensitively (RFC 9110 section 11.1) and may be followed by more than one space.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != ""
}

// BasicAuth accepts a request whose Authorization header carries Basic credentials naming user
// and one of passwords. Any other request gets a 401 with a Basic challenge for realm, so a
// browser asks for the credentials once and sends them with every later request to the server,
// the requests a single-page app makes itself included. Disabled lets every request through.
func BasicAuth(realm, user string, passwords []string, disabled bool) echo.MiddlewareFunc {
	challenge := fmt.Sprintf("Basic realm=%q, charset=\"UTF-8\"", realm)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if disabled {
			return next
		}
		return func(c *echo.Context) error {
			gotUser, gotPassword, ok := c.Request().BasicAuth()
			if ok && subtle.ConstantTimeCompare([]byte(gotUser), []byte(user)) == 1 && OneOf(gotPassword, passwords) {
				return next(c)
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, challenge)
			return problem.New(problem.Unauthorized, "", "a user name and password are required (HTTP Basic)")
		}
	}
}

// OneOf reports whether got is one of candidates, comparing with every candidate in constant time
// so that a token cannot be guessed byte by byte; an empty got is none.
func OneOf(got string, candidates []string) bool {
	found := 0
	for _, want := range candidates {
		found |= subtle.ConstantTimeCompare([]byte(got), []byte(want))
	}
	return found == 1 && got != ""
}
