package servicetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"
)

// A service's OpenAPI document is loaded once per running service (base URL) and validated
// with kin-openapi; every answer Call receives is then checked against it, so a handler that
// drifts from its document fails the test that called it.

type document struct {
	doc    *openapi3.T
	router routers.Router
}

var documents sync.Map // base URL → *document

// OpenAPI returns the OpenAPI document the service at base serves, after validating it; the test
// fails when the document is not valid OpenAPI.
func OpenAPI(t testing.TB, base string) *openapi3.T {
	t.Helper()
	return load(t, base).doc
}

func load(t testing.TB, base string) *document {
	t.Helper()
	if d, ok := documents.Load(base); ok {
		return d.(*document)
	}
	// A service still starting (waiting for its database) answers 503 to all but /healthz: the
	// document comes once it is up.
	var status int
	var raw []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		status, raw = getDocument(t, base)
		if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
	}
	require.Equal(t, http.StatusOK, status, "GET /openapi.json: %s", raw)
	d, err := parseDocument(raw)
	require.NoError(t, err, "the OpenAPI document %s/openapi.json", base)
	documents.Store(base, d)
	return d
}

func getDocument(t testing.TB, base string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/openapi.json", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

// parseDocument loads and validates an OpenAPI document and builds its router.
func parseDocument(raw []byte) (*document, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	doc.Servers = openapi3.Servers{{URL: "/"}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route: %w", err)
	}
	return &document{doc: doc, router: router}, nil
}

// RequireDocumented fails the test when the answer (status, header, body) to req is not what
// the service's OpenAPI document says the operation answers: an undocumented status, a body its
// schema rejects, or a body with members its schema does not list.
func RequireDocumented(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	base := req.URL.Scheme + "://" + req.URL.Host
	d := load(t, base)
	require.NoError(t, d.validate(req, status, header, body), "%s %s answered %d: %s", req.Method, req.URL.RequestURI(), status, body)
}

func (d *document) validate(req *http.Request, status int, header http.Header, body []byte) error {
	local := req.Clone(context.Background())
	local.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	local.Host = ""
	route, params, err := d.router.FindRoute(local)
	if err != nil {
		return fmt.Errorf("no documented operation: %w", err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: local, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: status,
		Header: header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true, MultiError: true,
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("answer differs from the document: %w", err)
	}
	if fields := undocumentedFields(route, status, body); len(fields) > 0 {
		return fmt.Errorf("answer has members the document does not list: %s", strings.Join(fields, ", "))
	}
	return nil
}

// readAll reads and closes an answer's body, so it can be both validated and decoded.
func readAll(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return b
}
