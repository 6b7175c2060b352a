// Package problem is the error vocabulary a Drover client can see. Business code returns an
// *Error with a Code (or wraps ErrNotFound / ErrConflict); the web layer turns it into an RFC 9457
// problem+json response with a stable type and the field at fault. Anything else is an internal
// error: logged once, never shown.
package problem

import (
	"errors"
	"fmt"
)

// Code classifies an error for the client. Each code has a fixed HTTP status and problem type.
type Code string

// The codes a client may see.
const (
	Invalid       Code = "invalid"       // 400: the request is malformed
	Unauthorized  Code = "unauthorized"  // 401: no or bad credentials
	NotFound      Code = "not-found"     // 404: the resource does not exist
	Conflict      Code = "conflict"      // 409: the resource's state forbids the request
	TooLarge      Code = "too-large"     // 413: the body exceeds the limit
	Unprocessable Code = "unprocessable" // 422: well-formed, but its content is unacceptable
	Busy          Code = "busy"          // 429: the work's queue is full; retry later
	Unavailable   Code = "unavailable"   // 503: a dependency is down
)

// Sentinels a store returns; they map to NotFound and Conflict.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// Error is an error a client may see.
type Error struct {
	Code   Code
	Field  string // the request field at fault, when there is one (JSON pointer-ish: "jobs[2].name")
	Detail string // a sentence for the client
	Queue  string // the queue a Busy error refuses work for
	Err    error  // the cause, for logs; never shown
}

func (e *Error) Error() string {
	msg := string(e.Code) + ": " + e.Detail
	if e.Field != "" {
		msg = string(e.Code) + ": " + e.Field + ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error with a formatted detail.
func New(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Invalidf returns an Invalid error about field.
func Invalidf(field, format string, args ...any) *Error { return New(Invalid, field, format, args...) }

// Unprocessablef returns an Unprocessable error about field.
func Unprocessablef(field, format string, args ...any) *Error {
	return New(Unprocessable, field, format, args...)
}

// NotFoundf returns a NotFound error.
func NotFoundf(format string, args ...any) *Error { return New(NotFound, "", format, args...) }

// Conflictf returns a Conflict error.
func Conflictf(format string, args ...any) *Error { return New(Conflict, "", format, args...) }

// CodeOf returns the code of err, or "" for an internal error.
func CodeOf(err error) Code {
	var pe *Error
	switch {
	case errors.As(err, &pe):
		return pe.Code
	case errors.Is(err, ErrNotFound):
		return NotFound
	case errors.Is(err, ErrConflict):
		return Conflict
	}
	return ""
}
