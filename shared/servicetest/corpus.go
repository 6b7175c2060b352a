package servicetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

// BadRequest is one request of a bad-input corpus: text that cannot be stored as sent (a NUL byte,
// invalid UTF-8, an escaped lone surrogate) in one string, or a number past any range in one
// numeric parameter, and the field a 400 answer must name.
type BadRequest struct {
	Method string
	Path   string // escaped path and query
	Body   []byte // JSON; nil for none
	Field  string
	// OutOfRange marks a well-formed number past the parameter's range, which may get a 422.
	OutOfRange bool
}

// The bad text a corpus puts in each string: escaped for a URL, and as JSON string literals
// (a NUL can only be written escaped in JSON; invalid UTF-8 only raw). Besides NUL and truncated
// or stray bytes: overlong encodings of a digit and of NUL, surrogates encoded as UTF-8 (CESU-8),
// escaped lone surrogates anywhere in a string, and mixed encodings (UTF-8 next to Latin-1, a
// good surrogate pair next to a bad byte or a lone half).
var (
	badURLText = []string{
		"%00", "a%00b", "%ff", "a%c3",
		"%c0%b1", "1%e0%80%b2", "%c0%80", "%ed%a0%80", "%ed%a0%bd%ed%b8%80",
		"%c3%a9%e9",
	}
	badJSONText = []string{
		`"\u0000"`, `"a\u0000b"`, "\"\xff\"", "\"a\xc3\"",
		"\"\xc0\xb1\"", "\"1\xe0\x80\xb2\"", "\"\xc0\x80\"", "\"\xed\xa0\x80\"",
		`"\ud800"`, `"\udc00"`, `"a\uDBFFb"`, `"\ud83d\u0041"`, `"\ude00\ud83d"`, `"x\\\ud800"`,
		"\"\xc3\xa9\xe9\"", "\"\\ud83d\\ude00\xff\"", `"\u00e9\udfff"`, "\"\\ud83d\xf0\x9f\x98\x80\"",
	}
	// badNumbers are numbers no numeric parameter takes: past 64 bits, past float64, overlong.
	badNumbers = []string{"99999999999999999999", "1e999", "1" + strings.Repeat("0", 400)}
)

// RequireBadInputRejected sends the corpus BadInputCorpus derives from the document of the
// service at base, plus extra, and requires each request to be answered 400 problem+json naming
// its field: no NUL byte or invalid UTF-8 reaches a handler, let alone Postgres.
func RequireBadInputRejected(t *testing.T, base string, extra ...BadRequest) {
	t.Helper()
	corpus := append(BadInputCorpus(OpenAPI(t, base)), extra...)
	require.NotEmpty(t, corpus)
	for _, r := range corpus {
		var body io.Reader
		if r.Body != nil {
			body = bytes.NewReader(r.Body)
		}
		req, err := http.NewRequestWithContext(t.Context(), r.Method, base+r.Path, body)
		require.NoError(t, err, r.Path)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+Token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw := readAll(t, resp)
		what := fmt.Sprintf("%s %s %q: %s", r.Method, r.Path, r.Body, raw)
		if r.OutOfRange && resp.StatusCode == http.StatusUnprocessableEntity {
			resp.StatusCode = http.StatusBadRequest
		}
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, what)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), what)
		var p struct{ Field string }
		require.NoError(t, json.Unmarshal(raw, &p), what)
		require.Equal(t, r.Field, p.Field, what)
	}
}

// BadInputCorpus derives from doc, for every operation, requests that each put bad text in one
// place: every path parameter, every query parameter, and every string of the JSON request body
// (member names of maps too). The other parameters get plausible values.
func BadInputCorpus(doc *openapi3.T) []BadRequest {
	var out []BadRequest
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			params := slices.Concat(item.Parameters, op.Parameters)
			for _, p := range params {
				for _, bad := range badURLText {
					out = append(out, paramRequest(method, path, params, p.Value, bad))
				}
				if isNumber(p.Value) {
					for _, bad := range badNumbers {
						r := paramRequest(method, path, params, p.Value, bad)
						r.OutOfRange = true
						out = append(out, r)
					}
				}
			}
			out = append(out, bodyRequests(method, fillPath(path, params, nil, ""), op)...)
		}
	}
	return out
}

// isNumber reports whether parameter p holds a number.
func isNumber(p *openapi3.Parameter) bool {
	if p.Schema == nil || p.Schema.Value == nil {
		return false
	}
	t := p.Schema.Value.Type
	return t.Includes(openapi3.TypeInteger) || t.Includes(openapi3.TypeNumber)
}

// paramRequest is a request with bad in the parameter at fault.
func paramRequest(method, path string, params openapi3.Parameters, fault *openapi3.Parameter, bad string) BadRequest {
	r := BadRequest{Method: method, Path: fillPath(path, params, fault, bad), Field: fault.Name}
	if fault.In == openapi3.ParameterInQuery {
		r.Path += "?" + fault.Name + "=" + bad
	}
	return r
}

// fillPath puts a plausible value in every path parameter, bad in fault.
func fillPath(path string, params openapi3.Parameters, fault *openapi3.Parameter, bad string) string {
	for _, p := range params {
		if p.Value.In != openapi3.ParameterInPath {
			continue
		}
		v := "1"
		if p.Value == fault {
			v = bad
		}
		path = strings.ReplaceAll(path, "{"+p.Value.Name+"}", v)
	}
	return path
}

var placeholder = regexp.MustCompile(`"__[SK][0-9]+__"`)

// bodyRequests puts bad text in each string of a sample of the operation's JSON body in turn.
func bodyRequests(method, path string, op *openapi3.Operation) []BadRequest {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil {
		return nil
	}
	var s sampler
	sample, err := json.Marshal(s.sample(media.Schema.Value, "", 0))
	if err != nil {
		panic(fmt.Sprintf("marshal a sample of %s %s: %v", method, path, err))
	}
	var out []BadRequest
	for _, spot := range s.spots {
		for _, bad := range badJSONText {
			body := bytes.Replace(sample, []byte(`"`+spot.placeholder+`"`), []byte(bad), 1)
			body = placeholder.ReplaceAllFunc(body, func(b []byte) []byte {
				if b[3] == 'K' {
					return []byte(`"k"`)
				}
				return []byte(`"x"`)
			})
			out = append(out, BadRequest{Method: method, Path: path, Body: body, Field: spot.field})
		}
	}
	return out
}

// spot is one string of a sample body: its placeholder and the field a problem about it names.
type spot struct {
	placeholder string
	field       string
}

// sampler builds a JSON value a schema describes, with a placeholder in every string.
type sampler struct{ spots []spot }

func (s *sampler) text(kind byte, field string) string {
	p := fmt.Sprintf("__%c%d__", kind, len(s.spots))
	s.spots = append(s.spots, spot{placeholder: p, field: field})
	return p
}

func (s *sampler) sample(schema *openapi3.Schema, field string, depth int) any {
	if schema == nil || depth > 8 {
		return nil
	}
	switch {
	case len(schema.AllOf) > 0:
		obj := map[string]any{}
		for _, part := range schema.AllOf {
			if m, ok := s.sample(part.Value, field, depth+1).(map[string]any); ok {
				for k, v := range m {
					obj[k] = v
				}
			}
		}
		return obj
	case len(schema.OneOf) > 0:
		return s.sample(schema.OneOf[0].Value, field, depth+1)
	case len(schema.AnyOf) > 0:
		return s.sample(schema.AnyOf[0].Value, field, depth+1)
	}
	return s.sampleTyped(schema, field, depth)
}

func (s *sampler) sampleTyped(schema *openapi3.Schema, field string, depth int) any {
	t := schema.Type
	switch {
	case t.Includes(openapi3.TypeString):
		return s.text('S', field)
	case t.Includes(openapi3.TypeObject) || len(schema.Properties) > 0:
		obj := map[string]any{}
		for name, p := range schema.Properties {
			obj[name] = s.sample(p.Value, join(field, name), depth+1)
		}
		if ap := schema.AdditionalProperties.Schema; ap != nil {
			obj[s.text('K', field)] = s.sample(ap.Value, join(field, "k"), depth+1)
		}
		return obj
	case t.Includes(openapi3.TypeArray):
		if schema.Items == nil {
			return []any{}
		}
		return []any{s.sample(schema.Items.Value, field+"[0]", depth+1)}
	case t.Includes(openapi3.TypeInteger) || t.Includes(openapi3.TypeNumber):
		return 1
	case t.Includes(openapi3.TypeBoolean):
		return false
	}
	return s.text('S', field) // any JSON: a string is one
}

func join(field, name string) string {
	if field == "" {
		return name
	}
	return field + "." + name
}
