package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

var (
	//go:embed openapi.json
	openAPI []byte
	//go:embed openapi_examples.json
	openAPIExamples []byte
	//go:embed openapi_seed.json
	openAPISeed []byte
)

// OpenAPI returns the document of the routes this service registers: the populate API, plus the
// example function and the seed endpoint when they are enabled, since the service refuses to
// start when its routes and document disagree.
func OpenAPI(examples, seed bool) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		return nil, fmt.Errorf("populate openapi document: %w", err)
	}
	paths := doc["paths"].(map[string]any)
	var extras [][]byte
	if examples {
		extras = append(extras, openAPIExamples)
	}
	if examples && seed {
		extras = append(extras, openAPISeed)
	}
	for _, extra := range extras {
		var part struct{ Paths map[string]any }
		if err := json.Unmarshal(extra, &part); err != nil {
			return nil, fmt.Errorf("populate openapi document: %w", err)
		}
		for p, item := range part.Paths {
			paths[p] = item
		}
	}
	return json.Marshal(doc)
}
