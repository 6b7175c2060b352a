package web

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

// partDoc uses every kind of component a part may bring: a schema, a parameter and a response.
const partDoc = `{
  "paths": {
    "/v1/things/{name}": {"get": {"operationId": "getThing",
      "parameters": [{"$ref": "#/components/parameters/Name"}],
      "responses": {"200": {"$ref": "#/components/responses/Thing"}, "404": {"$ref": "#/components/responses/Problem"}}}},
    "/v1/things": {"post": {"operationId": "createThing",
      "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
      "responses": {"201": {"$ref": "#/components/responses/Thing"}}}}
  },
  "components": {
    "parameters": {"Name": {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}},
    "responses": {"Thing": {"description": "a thing", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}},
    "schemas": {"Thing": {"type": "object", "properties": {"name": {"type": "string"}}}}
  }
}`

func TestMergedOpenAPIIsValid(t *testing.T) {
	t.Parallel()

	merged, err := mergeOpenAPI("test", [][]byte{[]byte(partDoc)})
	require.NoError(t, err)
	raw, err := json.Marshal(merged)
	require.NoError(t, err)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	require.NoError(t, err, "every component a part refers to is kept")
	require.NoError(t, doc.Validate(context.Background()))

	get := doc.Paths.Value("/v1/things/{name}").Get
	require.NotNil(t, get.Responses.Value("400"), "an operation with parameters documents 400")
	require.NotNil(t, get.Responses.Value("401"), "an operation behind the token documents 401")
	post := doc.Paths.Value("/v1/things").Post
	require.NotNil(t, post.Responses.Value("400"), "an operation with a body documents 400")
	health := doc.Paths.Value("/healthz").Get
	require.Nil(t, health.Responses.Value("401"), "an open endpoint answers no 401")
	require.Nil(t, health.Responses.Value("400"))
}

func TestCheckOpenAPINeedsOperationIDs(t *testing.T) {
	t.Parallel()

	doc, err := mergeOpenAPI("test", [][]byte{[]byte(`{"paths": {
		"/v1/a": {"get": {"responses": {"200": {"description": "a"}}}},
		"/v1/b": {"get": {"operationId": "getHealth", "responses": {"200": {"description": "b"}}}}}}`)})
	require.NoError(t, err)
	err = CheckOpenAPI(nil, doc)
	require.ErrorContains(t, err, "no operationId on GET /v1/a")
	require.ErrorContains(t, err, "operationId getHealth on each of GET /healthz, GET /v1/b")
}

func TestMergedOpenAPIKeepsEveryServer(t *testing.T) {
	t.Parallel()

	doc, err := mergeOpenAPI("test", [][]byte{[]byte(`{"servers": [{"url": "http://127.0.0.1:8081"}], "paths": {}}`)})
	require.NoError(t, err)
	require.Equal(t, []any{
		map[string]any{"url": "/", "description": "the service that serves this document"},
		map[string]any{"url": "http://127.0.0.1:8081"},
	}, doc["servers"])
	require.Empty(t, operationIDProblems(doc), "the base document names every operation")
}
