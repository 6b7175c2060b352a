package servicetest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

const thingsDoc = `{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {
  "/v1/things/{id}": {"get": {
    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
    "responses": {"200": {"description": "a thing", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Detail"}}}}}}}},
  "components": {"schemas": {
    "Thing": {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "object", "additionalProperties": {"type": "integer"}}}},
    "Detail": {"allOf": [{"$ref": "#/components/schemas/Thing"}, {"type": "object", "properties": {
      "parts": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
      "data": {"type": "object"}}}]}}}}`

func TestAnswersAreHeldToTheDocument(t *testing.T) {
	t.Parallel()

	d, err := parseDocument([]byte(thingsDoc))
	require.NoError(t, err)
	json := http.Header{"Content-Type": []string{"application/json"}}
	tests := []struct {
		name, body string
		status     int
		wantErr    string
	}{
		{"Documented", `{"id": 1, "tags": {"a": 1}, "parts": [{"name": "p"}], "data": {"free": true}}`, 200, ""},
		{"WrongType", `{"id": "one"}`, 200, "differs from the document"},
		{"UndocumentedStatus", `{"id": 1}`, 201, "differs from the document"},
		{"UndocumentedMember", `{"id": 1, "secret": 2}`, 200, "does not list: secret"},
		{"UndocumentedNestedMember", `{"id": 1, "parts": [{"name": "p"}, {"size": 3}]}`, 200, "does not list: parts[1].size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "http://127.0.0.1/v1/things/7", nil)
			err := d.validate(req, tt.status, json, []byte(tt.body))
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
