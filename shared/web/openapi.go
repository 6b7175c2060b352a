package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
)

// The OpenAPI document every service serves at /openapi.json is baseOpenAPI (the open endpoints
// and the problem+json error body) with the documents of the service's parts merged in: their
// paths and every kind of component. The answers every operation can give whatever its handler
// does are added where a part leaves them out: 400 for an operation with parameters or a body
// (the shared decoders reject bad text), 401 for one behind the bearer token, 503 for all but
// /healthz (a service waiting for its database at start answers nothing else).
//
// CheckOpenAPI holds the document to the routes that exist, so it cannot drift: a service whose
// routes and document disagree does not start, and its main_test fails.

const baseOpenAPI = `{
  "openapi": "3.1.0",
  "info": {"title": "", "version": "1"},
  "servers": [{"url": "/", "description": "the service that serves this document"}],
  "components": {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    "schemas": {
      "Problem": {"type": "object", "description": "RFC 9457 problem details", "properties": {
        "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
        "detail": {"type": "string"}, "instance": {"type": "string"},
        "field": {"type": "string", "description": "the request field at fault"},
        "queue": {"type": "string", "description": "the queue a 429 refuses work for"},
        "request_id": {"type": "string"}}}
    },
    "responses": {
      "Problem": {"description": "an RFC 9457 problem", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
      "Busy": {"description": "the queue this adds to holds MAX_QUEUED waiting jobs; the problem names it; retry after Retry-After seconds",
        "headers": {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}},
        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
    },
    "parameters": {
      "Limit": {"name": "limit", "in": "query", "description": "the most items a page holds",
        "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}},
      "Cursor": {"name": "cursor", "in": "query", "description": "the next_cursor of the previous page; absent for the first",
        "schema": {"type": "string", "maxLength": 2048}}
    }
  },
  "security": [{"bearer": []}],
  "paths": {
    "/healthz": {"get": {"operationId": "getHealth", "summary": "Liveness", "security": [], "responses": {"200": {"description": "alive"}}}},
    "/readyz": {"get": {"operationId": "getReadiness", "summary": "Readiness: database and River", "security": [], "responses": {"200": {"description": "ready"}, "503": {"description": "a dependency is down"}}}},
    "/metrics": {"get": {"operationId": "getMetrics", "summary": "Prometheus metrics", "security": [], "responses": {"200": {"description": "metrics"}}}},
    "/openapi.json": {"get": {"operationId": "getOpenAPI", "summary": "This document", "security": [], "responses": {"200": {"description": "OpenAPI 3.1"}}}}
  }
}`

// ServeOpenAPI merges docs (OpenAPI 3.1 JSON documents; their paths and components) into the base, serves the result at /openapi.json and checks it against the routes registered
// so far. Call it after every route is registered.
func (s *Server) ServeOpenAPI(title string, docs ...[]byte) error {
	doc, err := mergeOpenAPI(title, docs)
	if err != nil {
		return err
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode openapi document: %w", err)
	}
	s.Echo.GET("/openapi.json", func(c *echo.Context) error {
		return c.Blob(http.StatusOK, "application/json", body)
	})
	return CheckOpenAPI(s.Echo.Router().Routes(), doc)
}

type openAPIDoc map[string]any

func mergeOpenAPI(title string, docs [][]byte) (openAPIDoc, error) {
	var doc openAPIDoc
	if err := json.Unmarshal([]byte(baseOpenAPI), &doc); err != nil {
		return nil, fmt.Errorf("base openapi document: %w", err)
	}
	doc["info"].(map[string]any)["title"] = title
	for i, raw := range docs {
		if len(raw) == 0 {
			continue
		}
		var extra openAPIDoc
		if err := json.Unmarshal(raw, &extra); err != nil {
			return nil, fmt.Errorf("openapi document %d: %w", i, err)
		}
		merge(doc, extra, "paths")
		if servers, ok := extra["servers"].([]any); ok {
			doc["servers"] = append(doc["servers"].([]any), servers...)
		}
		comps, _ := extra["components"].(map[string]any)
		for kind := range comps {
			merge(doc["components"].(map[string]any), comps, kind)
		}
	}
	addCommonResponses(doc)
	return doc, nil
}

// merge copies the entries of src[key] into dst[key], creating dst[key] when needed.
func merge(dst, src map[string]any, key string) {
	from, _ := src[key].(map[string]any)
	to, ok := dst[key].(map[string]any)
	if !ok {
		to = map[string]any{}
		dst[key] = to
	}
	for k, v := range from {
		to[k] = v
	}
}

// addCommonResponses documents the problems the server answers before any handler runs: 400,
// 401, and 503 on every path but /healthz while the service starts (waiting for its database).
func addCommonResponses(doc openAPIDoc) {
	problem := map[string]any{"$ref": "#/components/responses/Problem"}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			op, _ := op.(map[string]any)
			responses, ok := op["responses"].(map[string]any)
			if !ok {
				continue
			}
			params, _ := op["parameters"].([]any)
			if _, ok := responses["400"]; !ok && (len(params) > 0 || op["requestBody"] != nil) {
				responses["400"] = problem
			}
			security, secured := op["security"].([]any)
			if _, ok := responses["401"]; !ok && (!secured || len(security) > 0) {
				responses["401"] = problem
			}
			if _, ok := responses["503"]; !ok && path != "/healthz" {
				responses["503"] = problem
			}
		}
	}
}

// CheckOpenAPI reports every route missing from doc, every documented operation with no route,
// and every operation without an operationId or with one another operation has: clients are
// generated from the document, and a missing id gets a made-up name. Echo's :param segments match
// OpenAPI's {param}.
func CheckOpenAPI(routes echo.Routes, doc openAPIDoc) error {
	documented := map[string]bool{}
	problems := operationIDProblems(doc)
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	for _, r := range routes {
		if r.Method == echo.RouteNotFound || r.Method == echo.RouteAny {
			continue
		}
		key := r.Method + " " + openAPIPath(r.Path)
		if !documented[key] {
			problems = append(problems, "undocumented route "+key)
		}
		delete(documented, key)
	}
	for key := range documented {
		problems = append(problems, "documented operation with no route "+key)
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("openapi document and routes disagree: %s", strings.Join(problems, "; "))
	}
	return nil
}

// httpMethods are the keys of an OpenAPI path item that are operations.
var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

// operationIDProblems names every operation of doc without an operationId, and every
// operationId that more than one operation has.
func operationIDProblems(doc openAPIDoc) []string {
	var problems []string
	byID := map[string][]string{}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			op, isOp := op.(map[string]any)
			if !isOp || !httpMethods[method] {
				continue // a path's own parameters or summary
			}
			key := strings.ToUpper(method) + " " + path
			id, _ := op["operationId"].(string)
			if id == "" {
				problems = append(problems, "no operationId on "+key)
				continue
			}
			byID[id] = append(byID[id], key)
		}
	}
	for id, keys := range byID {
		if len(keys) > 1 {
			slices.Sort(keys)
			problems = append(problems, fmt.Sprintf("operationId %s on each of %s", id, strings.Join(keys, ", ")))
		}
	}
	return problems
}

func openAPIPath(echoPath string) string {
	parts := strings.Split(echoPath, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	return strings.Join(parts, "/")
}

// OpenAPIDocument is the document ServeOpenAPI serves for a service made of these parts, without
// the check against its routes: what a client checks the operations it calls against.
func OpenAPIDocument(title string, docs ...[]byte) ([]byte, error) {
	doc, err := mergeOpenAPI(title, docs)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}
