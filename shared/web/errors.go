package web

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v5"

	"drover.dev/shared/problem"
)

// problemTypeBase prefixes every problem type; the suffix is the code, stable across releases.
const problemTypeBase = "https://drover.dev/problems/"

// Problem is the RFC 9457 body of every error response.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Field     string `json:"field,omitempty"`
	Queue     string `json:"queue,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

var statusOfCode = map[problem.Code]int{
	problem.Invalid:       http.StatusBadRequest,
	problem.Unauthorized:  http.StatusUnauthorized,
	problem.NotFound:      http.StatusNotFound,
	problem.Conflict:      http.StatusConflict,
	problem.TooLarge:      http.StatusRequestEntityTooLarge,
	problem.Unprocessable: http.StatusUnprocessableEntity,
	problem.Busy:          http.StatusTooManyRequests,
	problem.Unavailable:   http.StatusServiceUnavailable,
}

var codeOfStatus = func() map[int]problem.Code {
	m := map[int]problem.Code{http.StatusMethodNotAllowed: problem.Invalid}
	for code, status := range statusOfCode {
		m[status] = code
	}
	return m
}()

// classify returns the status and the client-visible problem for err. Errors that are neither a
// problem nor one of echo's own HTTP errors are internal: 500 with a generic detail.
func classify(err error) (int, problem.Code, string, string) {
	if code := problem.CodeOf(err); code != "" {
		var pe *problem.Error
		detail, field := err.Error(), ""
		if errors.As(err, &pe) {
			detail, field = pe.Detail, pe.Field
		}
		return statusOfCode[code], code, detail, field
	}
	if status := echo.StatusCode(err); status != 0 && status < 500 {
		code, ok := codeOfStatus[status]
		if !ok {
			code = problem.Invalid
		}
		return status, code, http.StatusText(status), ""
	}
	return http.StatusInternalServerError, "internal", "the server could not complete the request; see its log for the request id", ""
}

// responseStatus is the status the client sees for a request that returned err.
func responseStatus(c *echo.Context, err error) int {
	if resp, _ := echo.UnwrapResponse(c.Response()); resp != nil && resp.Committed || err == nil {
		_, status := echo.ResolveResponseStatus(c.Response(), nil)
		return status
	}
	status, _, _, _ := classify(err)
	return status
}

func errorHandler(logger *slog.Logger) echo.HTTPErrorHandler {
	return func(c *echo.Context, err error) {
		if resp, _ := echo.UnwrapResponse(c.Response()); resp != nil && resp.Committed {
			return
		}
		status, code, detail, field := classify(err)
		if status >= 500 {
			logger.ErrorContext(c.Request().Context(), "request failed", "request_id", requestID(c), "path", c.Request().URL.Path, "error", err)
		}
		body := Problem{
			Type:      problemTypeBase + string(code),
			Title:     http.StatusText(status),
			Status:    status,
			Detail:    detail,
			Instance:  c.Request().URL.Path,
			Field:     field,
			RequestID: requestID(c),
		}
		var pe *problem.Error
		if errors.As(err, &pe) {
			body.Queue = pe.Queue
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		if err := c.JSON(status, body); err != nil {
			logger.Warn("write problem response", "request_id", requestID(c), "error", err)
		}
	}
}
