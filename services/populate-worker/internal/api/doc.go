// Package api adapts the populate engine to HTTP: routes.go lists every route under /v1, one
// handle_<resource>.go per resource. Handlers validate and bound their input, call the engine and
// return its problems as problem+json through the shared error handler.
package api
