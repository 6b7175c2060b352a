package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"drover.dev/shared/problem"
)

// DecodeJSON reads the request body into v strictly: one JSON value, no unknown fields, within
// the body limit. Every failure is a problem naming what is wrong.
func DecodeJSON(c *echo.Context, v any) error {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return decodeProblem(raw, err)
	}
	if err := CheckJSON("", raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeProblem(raw, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problem.Invalidf("", "the body must hold a single JSON value")
	}
	return nil
}

// decodeProblem is the problem of err, which decoding raw returned.
func decodeProblem(raw []byte, err error) error {
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
		return problem.Invalidf(typeField(raw, typeErr), "must be %s, not %s", jsonTypeName(typeErr.Type), jsonValueName(typeErr.Value))
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

// typeField is the path of the value a type error is about, with its array positions
// (jobs[0].command[0]), found from where in raw the decoder stopped. encoding/json names only the
// members (jobs.command); that name is kept when the two disagree, as they do for a value whose
// own UnmarshalJSON made the error (its offset is then within the value, not within raw).
func typeField(raw []byte, err *json.UnmarshalTypeError) string {
	found, ok := fieldAt(raw, err.Offset)
	if !ok || withoutIndexes(found) != err.Field {
		return err.Field
	}
	return found
}

// withoutIndexes is a path without its array positions: jobs[0].command[0] is jobs.command.
func withoutIndexes(path string) string {
	var b strings.Builder
	skip := false
	for _, r := range path {
		switch {
		case r == '[':
			skip = true
		case r == ']':
			skip = false
		case !skip:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// jsonTypeName names the JSON a Go type takes, for a client who writes JSON.
func jsonTypeName(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}

// jsonValueName names the JSON value encoding/json found ("bool", "number 1.5", "object").
func jsonValueName(v string) string {
	switch {
	case v == "bool":
		return "a boolean"
	case v == "number":
		return "a number"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	case v == "array", v == "object":
		return "an " + v
	case v == "":
		return "that value"
	}
	return "a " + v
}
