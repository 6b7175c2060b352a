package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkerSettingsAreTheServiceDefaults holds workerSettings, and poolHeadroom, to the
// service's config.go: each field's default tag is the tag of the Config field of that name,
// so the end-to-end figures run the service as a deployment that leaves them unset runs it.
func TestWorkerSettingsAreTheServiceDefaults(t *testing.T) {
	t.Parallel()
	file, err := parser.ParseFile(token.NewFileSet(), "../../config.go", nil, 0)
	require.NoError(t, err)
	tags, headroom := map[string]string{}, ""
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeSpec:
			if st, ok := n.Type.(*ast.StructType); ok && n.Name.Name == "Config" {
				for _, f := range st.Fields.List {
					if len(f.Names) == 1 && f.Tag != nil {
						tag, err := strconv.Unquote(f.Tag.Value)
						require.NoError(t, err)
						tags[f.Names[0].Name] = reflect.StructTag(tag).Get("default")
					}
				}
			}
		case *ast.ValueSpec:
			if n.Names[0].Name == "poolHeadroom" {
				headroom = n.Values[0].(*ast.BasicLit).Value
			}
		}
		return true
	})
	st := reflect.TypeFor[workerSettings]()
	for i := range st.NumField() {
		f := st.Field(i)
		want, ok := tags[f.Name]
		require.True(t, ok, "config.go's Config has no field %s", f.Name)
		require.Equal(t, want, f.Tag.Get("default"), "default of %s", f.Name)
	}
	require.Equal(t, strconv.Itoa(poolHeadroom), headroom, "poolHeadroom")
}
