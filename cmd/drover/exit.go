package main

import "net/http"

// The exit codes: what a script checks.
const (
	exitOK          = 0
	exitFailure     = 1   // anything else: a 5xx but 503, an answer drover cannot read
	exitUsage       = 2   // bad flags or arguments, or a request the service refused as malformed (400)
	exitNotFound    = 3   // the batch, group, job, run or table does not exist (404)
	exitRefused     = 4   // the service refused the change in its current state (409, 422)
	exitUnavailable = 5   // a service does not answer, or is not ready (503)
	exitAuth        = 6   // the token was refused (401, 403)
	exitUnsuccess   = 7   // what drover waited for ended badly: a failed batch or group, a run with errors
	exitInterrupted = 130 // Ctrl-C
)

// exitCodes is the table --help shows.
const exitCodes = `Exit codes:
  0    success
  1    an unexpected error (a 5xx answer, an answer drover cannot read)
  2    bad flags or arguments, or a request the service refused as malformed (400)
  3    not found (404): no such batch, group, job, run or table
  4    refused in the current state (409, 422): e.g. cancelling a batch that ended
  5    a service does not answer or is not ready (503); status: one service is down
  6    the token was refused (401, 403)
  7    what was followed ended badly: a failed batch or build group, a populate run with errors
  130  interrupted (Ctrl-C)`

// exitError is an error with the exit code it means. quiet ones have said everything already.
type exitError struct {
	code  int
	err   error
	quiet bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// unsuccessful is exitUnsuccess with its message.
func unsuccessful(err error) error { return &exitError{code: exitUnsuccess, err: err} }

// codeOf maps an HTTP status to the exit code it means.
func codeOf(status int) int {
	switch status {
	case http.StatusBadRequest:
		return exitUsage
	case http.StatusNotFound:
		return exitNotFound
	case http.StatusConflict, http.StatusUnprocessableEntity:
		return exitRefused
	case http.StatusUnauthorized, http.StatusForbidden:
		return exitAuth
	case http.StatusServiceUnavailable:
		return exitUnavailable
	}
	return exitFailure
}
