package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"drover.dev/shared/problem"
)

// DecodeJSON reads the request body into v strictly: one JSON value, no unknown fields, within
// the body limit. Every failure is a problem naming what is wrong.
func DecodeJSON(c *echo.Context, v any) error {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return decodeProblem(err)
	}
	if err := CheckJSON("", raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problem.Invalidf("", "the body must hold a single JSON value")
	}
	return nil
}

func decodeProblem(err error) error {
	var (
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
		httpErr *echo.HTTPError
	)
	switch {
	case errors.As(err, &httpErr) && httpErr.Code == http.StatusRequestEntityTooLarge:
		return &problem.Error{Code: problem.TooLarge, Detail: "the request body exceeds the limit", Err: err}
	case errors.Is(err, io.EOF):
		return problem.Invalidf("", "the body is empty; a JSON object is required")
	case errors.As(err, &syntax):
		return problem.Invalidf("", "malformed JSON at byte %d", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem.Invalidf("", "the JSON body ends early")
	case errors.As(err, &typeErr):
		return problem.Invalidf(typeErr.Field, "must be %s, not JSON %s", typeErr.Type, typeErr.Value)
	default:
		if field, ok := unknownField(err); ok {
			return problem.Invalidf(field, "unknown field")
		}
		return &problem.Error{Code: problem.Invalid, Detail: "the body is not acceptable JSON", Err: err}
	}
}

// unknownField extracts the name from encoding/json's unknown-field error, whose only form is a
// message: `json: unknown field "x"`.
func unknownField(err error) (string, bool) {
	var name string
	if _, scanErr := fmt.Sscanf(err.Error(), "json: unknown field %q", &name); scanErr != nil {
		return "", false
	}
	return name, true
}

// PathInt64 parses the path parameter name as a positive 64-bit id written in canonical decimal:
// "+1", "01" and " 1" are not ids, so one id has one URL.
func PathInt64(c *echo.Context, name string) (int64, error) {
	return ParseID(name, c.Param(name))
}

// ParseID parses s, the value of the parameter field, as a positive 64-bit id in canonical
// decimal.
func ParseID(field, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != s {
		return 0, problem.Invalidf(field, "must be a positive 64-bit integer in decimal, not %q", s)
	}
	return id, nil
}
