package servicetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// A schema that lists an object's properties lets any other member through unless it says
// additionalProperties: false. So a field a handler starts returning would go unnoticed by
// schema validation alone; undocumentedFields names every member of an answer that the
// operation's schema does not list.

// undocumentedFields returns the paths of the members of body that the schema of the answer
// to route with status does not document.
func undocumentedFields(route *routers.Route, status int, body []byte) []string {
	ref := route.Operation.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return nil
	}
	media := ref.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil || len(body) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil // not JSON: the schema validation reports it
	}
	var out []string
	walkUndocumented(media.Schema.Value, v, "", &out)
	slices.Sort(out)
	return out
}

func walkUndocumented(s *openapi3.Schema, v any, path string, out *[]string) {
	if s == nil || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		props, open := properties(s)
		for name, member := range v {
			ps, ok := props[name]
			switch {
			case ok:
				walkUndocumented(ps, member, path+"."+name, out)
			case s.AdditionalProperties.Schema != nil:
				walkUndocumented(s.AdditionalProperties.Schema.Value, member, path+"."+name, out)
			case !open:
				*out = append(*out, strings.TrimPrefix(path+"."+name, "."))
			}
		}
	case []any:
		if s.Items == nil {
			return
		}
		for i, item := range v {
			walkUndocumented(s.Items.Value, item, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// properties returns the properties s documents, its allOf parts' included, and whether it leaves
// its members open: a free-form object, one that lists no properties.
func properties(s *openapi3.Schema) (map[string]*openapi3.Schema, bool) {
	props := map[string]*openapi3.Schema{}
	for name, p := range s.Properties {
		props[name] = p.Value
	}
	for _, part := range s.AllOf {
		if part.Value == nil {
			continue
		}
		sub, _ := properties(part.Value)
		for name, p := range sub {
			props[name] = p
		}
	}
	return props, len(props) == 0
}
