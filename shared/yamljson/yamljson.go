// Package yamljson reads a document written as JSON or as YAML into the JSON it stands for, so
// that a file a person writes in either can be posted to a Drover API as it is. drover's
// `builds submit` reads group files with it, and build-scheduler's test of examples/group.yaml
// reads that file the same way, so the example is checked as drover would send it.
package yamljson

import (
	"encoding/json"

	"go.yaml.in/yaml/v3"
)

// ToJSON returns raw itself when it is JSON, else the YAML document it holds, as JSON. JSON
// passes through untouched rather than through the YAML decoder, which would turn its numbers
// into Go's: the service then judges every number as it was written (an integer past 2^63 is
// refused as out of range, not rounded on the way).
func ToJSON(raw []byte) (json.RawMessage, error) {
	if json.Valid(raw) {
		return raw, nil
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}
