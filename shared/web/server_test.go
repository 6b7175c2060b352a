package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/shared/problem"
)

type testBundle struct {
	server *Server
	ready  error
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{}
	s, err := New(Config{Tokens: []string{"good"}, BodyLimit: 256}, slog.New(slog.DiscardHandler),
		Check{Name: "database", Func: func(context.Context) error { return b.ready }})
	require.NoError(t, err)
	type item struct {
		Name  string            `json:"name"`
		Count int               `json:"count"`
		Tags  map[string]string `json:"tags"`
		Parts []struct {
			Name string `json:"name"`
		} `json:"parts"`
	}
	s.API.POST("/items", func(c *echo.Context) error {
		var it item
		if err := DecodeJSON(c, &it); err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, it)
	})
	s.API.GET("/items/:id", func(c *echo.Context) error {
		if _, err := PathInt64(c, "id"); err != nil {
			return err
		}
		return problem.Unprocessablef("id", "item is archived")
	})
	s.API.GET("/things/:name", func(c *echo.Context) error { return c.JSON(http.StatusOK, c.Param("name")) })
	s.API.GET("/boom", func(*echo.Context) error { return errors.New("pq: secret internals") })
	b.server = s
	return b
}

// response is what a test looks at in an answer.
type response struct {
	StatusCode int
	Header     http.Header
}

// do sends a request and returns the status, the headers and the decoded body.
func (b *testBundle) do(t *testing.T, method, path, token, body string) (response, map[string]any) {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	b.server.Echo.ServeHTTP(rec, req)
	var out map[string]any
	if rec.Body.Len() > 0 {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	}
	return response{StatusCode: rec.Code, Header: rec.Header()}, out
}

func TestNewRefusesOpenAPIWithoutTokens(t *testing.T) {
	t.Parallel()

	_, err := New(Config{}, slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, ErrNoTokens)
	_, err = New(Config{AuthDisabled: true}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
}

func TestBearerAuth(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, header string
		want         int
	}{
		{"Missing", "", http.StatusUnauthorized},
		{"Wrong", "Bearer bad", http.StatusUnauthorized},
		{"Good", "Bearer good", http.StatusUnprocessableEntity},
		{"LowercaseScheme", "bearer good", http.StatusUnprocessableEntity},
		{"UppercaseScheme", "BEARER good", http.StatusUnprocessableEntity},
		{"SpacesBeforeToken", "Bearer   good", http.StatusUnprocessableEntity},
		{"NoSpace", "Bearergood", http.StatusUnauthorized},
		{"NoToken", "bearer ", http.StatusUnauthorized},
		{"OtherScheme", "Basic good", http.StatusUnauthorized},
		{"TokenWithTrailer", "Bearer good x", http.StatusUnauthorized},
		{"NonASCII", "Bearer g\xf6od", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/v1/items/1", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			setup(t).server.Echo.ServeHTTP(rec, req)
			require.Equal(t, tt.want, rec.Code, rec.Body.String())
			require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
			if tt.want == http.StatusUnauthorized {
				require.Contains(t, rec.Body.String(), `"type":"https://drover.dev/problems/unauthorized"`)
				require.Contains(t, rec.Header().Get("WWW-Authenticate"), "Bearer")
			}
		})
	}
}

// TestHeaderErrorsAreProblems sends what net/http's server refuses before any handler runs,
// over a real connection, and requires a problem+json answer all the same.
func TestHeaderErrorsAreProblems(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, header string
		status       int
		typ          string
	}{
		{"NULInAuthorization", "Authorization: Bearer go\x00od\r\n", 400, "invalid"},
		{"ControlByteInValue", "X-Note: a\x01b\r\n", 400, "invalid"},
		{"BadHeaderName", "Bad Name: x\r\n", 400, "invalid"},
		{"HeadersTooLarge", "X-Big: " + strings.Repeat("a", 2<<20) + "\r\n", 431, "too-large"},
		{"UnknownTransferEncoding", "Transfer-Encoding: foo\r\n", 501, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr := serve(t, setup(t))
			conn, err := new(net.Dialer).DialContext(t.Context(), "tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			r := bufio.NewReader(conn)

			// A good request first: the rewriting leaves every normal answer alone.
			_, err = io.WriteString(conn, "GET /v1/items/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n\r\n")
			require.NoError(t, err)
			resp, err := http.ReadResponse(r, nil)
			require.NoError(t, err)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, string(raw))
			require.Contains(t, string(raw), "item is archived")

			_, _ = io.WriteString(conn, "GET /v1/items/1 HTTP/1.1\r\nHost: x\r\n"+tt.header+"\r\n")
			resp, err = http.ReadResponse(r, nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			raw, err = io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.status, resp.StatusCode, string(raw))
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			var p Problem
			require.NoError(t, json.Unmarshal(raw, &p), string(raw))
			require.Equal(t, "https://drover.dev/problems/"+tt.typ, p.Type)
			require.Equal(t, tt.status, p.Status)
			require.NotEmpty(t, p.Detail)
		})
	}
}

// serve runs b's server on a loopback port until the test ends and returns its address.
func serve(t *testing.T, b *testBundle) string {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- b.server.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, b.server.Shutdown(ctx))
		require.NoError(t, <-done)
	})
	return ln.Addr().String()
}

func TestOpenEndpointsNeedNoToken(t *testing.T) {
	t.Parallel()
	b := setup(t)

	resp, _ := b.do(t, http.MethodGet, "/healthz", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, body := b.do(t, http.MethodGet, "/readyz", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", body["database"])

	b.ready = errors.New("connection refused")
	resp, body = b.do(t, http.MethodGet, "/readyz", "", "")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "connection refused", body["database"])

	rec := httptest.NewRecorder()
	b.server.Echo.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `http_requests_total{method="GET",route="/readyz",status="503"} 1`)
}

func TestErrorsAreProblems(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, method, path, body string
		status                   int
		typ, field               string
	}{
		{"Unprocessable", "GET", "/v1/items/7", "", 422, "unprocessable", "id"},
		{"BadPathID", "GET", "/v1/items/x", "", 400, "invalid", "id"},
		{"UnknownRoute", "GET", "/v1/nothing", "", 404, "not-found", ""},
		{"UnknownField", "POST", "/v1/items", `{"name":"a","colour":"red"}`, 400, "invalid", "colour"},
		{"WrongType", "POST", "/v1/items", `{"name":"a","count":"many"}`, 400, "invalid", "count"},
		{"Malformed", "POST", "/v1/items", `{"name":`, 400, "invalid", ""},
		{"Empty", "POST", "/v1/items", ``, 400, "invalid", ""},
		{"Trailing", "POST", "/v1/items", `{"name":"a"} {}`, 400, "invalid", ""},
		{"TooLarge", "POST", "/v1/items", `{"name":"` + strings.Repeat("a", 300) + `"}`, 413, "too-large", ""},
		{"Internal", "GET", "/v1/boom", "", 500, "internal", ""},
		{"PlusID", "GET", "/v1/items/+1", "", 400, "invalid", "id"},
		{"ZeroPaddedID", "GET", "/v1/items/01", "", 400, "invalid", "id"},
		{"SpacedID", "GET", "/v1/items/%201", "", 400, "invalid", "id"},
		{"ZeroID", "GET", "/v1/items/0", "", 400, "invalid", "id"},
		{"IDPast64Bits", "GET", "/v1/items/9223372036854775808", "", 400, "invalid", "id"},
		{"NULInPath", "GET", "/v1/things/a%00b", "", 400, "invalid", "name"},
		{"BadUTF8InPath", "GET", "/v1/things/%ff", "", 400, "invalid", "name"},
		{"EscapedNULInPath", "GET", "/v1/things/%41%00", "", 400, "invalid", "name"},
		{"NULInQuery", "GET", "/v1/things/a?hotkey=%00", "", 400, "invalid", "hotkey"},
		{"BadUTF8InQuery", "GET", "/v1/things/a?table=%ff", "", 400, "invalid", "table"},
		{"BadUTF8InQueryName", "GET", "/v1/things/a?%ff=1", "", 400, "invalid", "query"},
		{"NULInJSON", "POST", "/v1/items", `{"name":"a\u0000"}`, 400, "invalid", "name"},
		{"BadUTF8InJSON", "POST", "/v1/items", "{\"name\":\"\xff\"}", 400, "invalid", "name"},
		{"NULInJSONMapKey", "POST", "/v1/items", `{"tags":{"a\u0000":"b"}}`, 400, "invalid", "tags"},
		{"BadUTF8InJSONMapValue", "POST", "/v1/items", "{\"tags\":{\"k\":\"\xc3\"}}", 400, "invalid", "tags.k"},
		{"NULInJSONArray", "POST", "/v1/items", `{"parts":[{"name":"a"},{"name":"\u0000"}]}`, 400, "invalid", "parts[1].name"},
		{"BadUTF8InJSONMemberName", "POST", "/v1/items", "{\"na\xffme\":\"a\"}", 400, "invalid", ""},
		{"LoneHighSurrogate", "POST", "/v1/items", `{"name":"\ud800"}`, 400, "invalid", "name"},
		{"LoneLowSurrogate", "POST", "/v1/items", `{"name":"a\uDC00b"}`, 400, "invalid", "name"},
		{"HighThenNoLow", "POST", "/v1/items", `{"name":"\ud83d\u0041"}`, 400, "invalid", "name"},
		{"HighThenRawText", "POST", "/v1/items", `{"name":"\ud83dé"}`, 400, "invalid", "name"},
		{"HighAtEnd", "POST", "/v1/items", `{"name":"ok\\\ud83d"}`, 400, "invalid", "name"},
		{"TwoHighs", "POST", "/v1/items", `{"name":"\ud83d\ud83d"}`, 400, "invalid", "name"},
		{"SurrogateInMapKey", "POST", "/v1/items", `{"tags":{"\udfff":"b"}}`, 400, "invalid", "tags"},
		{"SurrogateInMapValue", "POST", "/v1/items", `{"tags":{"k":"\ud800"}}`, 400, "invalid", "tags.k"},
		{"SurrogateNested", "POST", "/v1/items", `{"parts":[{"name":"a"},{"name":"x\udbff"}]}`, 400, "invalid", "parts[1].name"},
		{"SurrogateInMemberName", "POST", "/v1/items", `{"na\ud800me":"a"}`, 400, "invalid", ""},
		{"OverlongNUL", "POST", "/v1/items", "{\"name\":\"\xc0\x80\"}", 400, "invalid", "name"},
		{"CESUSurrogate", "POST", "/v1/items", "{\"name\":\"\xed\xa0\x80\"}", 400, "invalid", "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := setup(t).do(t, tt.method, tt.path, "good", tt.body)
			require.Equal(t, tt.status, resp.StatusCode, body)
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			require.Equal(t, "https://drover.dev/problems/"+tt.typ, body["type"])
			require.EqualValues(t, tt.status, body["status"])
			require.NotEmpty(t, body["request_id"])
			if tt.field != "" {
				require.Equal(t, tt.field, body["field"])
			}
			require.NotContains(t, body["detail"], "secret internals", "a 500 never leaks the cause")
		})
	}
}

func TestDecodeJSONAcceptsGoodBody(t *testing.T) {
	t.Parallel()

	b := setup(t)
	resp, body := b.do(t, http.MethodPost, "/v1/items", "good", `{"name":"a\u00e9\\u0000","tags":{"k":"v"},"parts":[{"name":"é"}]}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	require.Equal(t, "aé\\u0000", body["name"], "an escaped backslash before u0000 is no NUL")
	resp, body = b.do(t, http.MethodPost, "/v1/items", "good", `{"name":"\ud83d\uDE00\\ud800\ufffd\u00e9\n"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	require.Equal(t, "😀\\ud800\ufffdé\n", body["name"], "a surrogate pair, an escaped backslash and U+FFFD written out are text")
	resp, _ = b.do(t, http.MethodGet, "/v1/items/9223372036854775807", "good", "")
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "the largest 64-bit id is an id")
}

func TestServeAndShutdown(t *testing.T) {
	t.Parallel()
	b := setup(t)

	srv := httptest.NewUnstartedServer(nil)
	ln := srv.Listener
	done := make(chan error, 1)
	go func() { done <- b.server.Serve(ln) }()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+ln.Addr().String()+"/healthz", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.NoError(t, b.server.Shutdown(ctx))
	require.NoError(t, <-done)
}

func TestServeOpenAPIChecksRoutes(t *testing.T) {
	t.Parallel()

	const complete = `{"paths": {
		"/v1/items": {"post": {"operationId": "createItem", "responses": {"201": {"description": "created"}}}},
		"/v1/items/{id}": {"get": {"operationId": "getItem", "responses": {"200": {"description": "an item"}}}},
		"/v1/things/{name}": {"get": {"operationId": "getThing", "responses": {"200": {"description": "a thing"}}}},
		"/v1/boom": {"get": {"operationId": "getBoom", "responses": {"500": {"description": "always"}}}}}}`
	tests := []struct {
		name, doc, wantErr string
	}{
		{"Complete", complete, ""},
		{"MissingRoute", `{"paths": {"/v1/items": {"post": {}}, "/v1/boom": {"get": {}}, "/v1/things/{name}": {"get": {}}}}`, "undocumented route GET /v1/items/{id}"},
		{"NoSuchRoute", strings.Replace(complete, `"/v1/boom"`, `"/v1/bang"`, 1), "documented operation with no route GET /v1/bang"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			err := b.server.ServeOpenAPI("test", []byte(tt.doc))
			if tt.wantErr == "" {
				require.NoError(t, err)
				resp, body := b.do(t, http.MethodGet, "/openapi.json", "", "")
				require.Equal(t, http.StatusOK, resp.StatusCode)
				require.Contains(t, body["paths"], "/v1/items/{id}")
				require.Contains(t, body["paths"], "/healthz", "the base document is merged in")
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// A value of the wrong type is named with its array positions, and the detail says in JSON's
// words what was expected and what came.
func TestWrongTypeNamesThePositionInJSONWords(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, body, field, detail string }{
		{"Nested", `{"parts":[{"name":"a"},{"name":true}]}`, "parts[1].name", "must be a string, not a boolean"},
		{"Scalar", `{"count":"many"}`, "count", "must be an integer, not a string"},
		{"Fraction", `{"count":1.5}`, "count", "must be an integer, not the number 1.5"},
		{"ObjectForString", `{"name":{"a":1}}`, "name", "must be a string, not an object"},
		{"ArrayForMap", `{"tags":[1]}`, "tags", "must be an object, not an array"},
		{"MapValue", `{"tags":{"k":2}}`, "tags", "must be a string, not a number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := setup(t).do(t, "POST", "/v1/items", "good", tt.body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
			require.Equal(t, tt.field, body["field"])
			require.Equal(t, tt.detail, body["detail"])
		})
	}
}
