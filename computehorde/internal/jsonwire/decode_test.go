package jsonwire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

type testBase struct {
	ID       string `json:"id"`
	Shadowed string `json:"shadowed"`
}

type testInner struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

// testSelf unmarshals itself, so Decode leaves its members to it.
type testSelf struct{ raw string }

func (s *testSelf) UnmarshalJSON(data []byte) error {
	s.raw = string(data)
	return nil
}

type testTree struct {
	Name string     `json:"name"`
	Kids []testTree `json:"kids"`
}

type testChain []testChain

type testOuter struct {
	*testBase
	Shadowed   int                  `json:"shadowed"` // hides testBase's
	Inner      testInner            `json:"inner"`
	Ptr        *testInner           `json:"ptr"`
	List       []testInner          `json:"list"`
	Array      [2]testInner         `json:"array"`
	ByKey      map[string]testInner `json:"by_key"`
	Raw        json.RawMessage      `json:"raw"`
	Any        any                  `json:"any"`
	Self       testSelf             `json:"self"`
	Tree       testTree             `json:"tree"`
	Chain      testChain            `json:"chain"`
	Untagged   string
	Skipped    string `json:"-"`
	unexported string
}

func TestKeep(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		data string
		want string // "" when data is kept as it is
	}{
		{name: "Exact", data: `{"id":"a","shadowed":1,"Untagged":"u","kind":"k"}`},
		{name: "VariantAfter", data: `{"id":"a","ID":"b"}`, want: `{"id":"a"}`},
		{name: "VariantBefore", data: `{"Id":"b","id":"a"}`, want: `{"id":"a"}`},
		{name: "VariantAlone", data: `{"ID":"b"}`, want: `{}`},
		{name: "OnlyStrays", data: `{"ID":"b","Shadowed":2}`, want: `{}`},
		{name: "KeptAfterDropped", data: `{"id":"a","ID":"b","shadowed":1,"SHADOWED":2,"Untagged":"u"}`, want: `{"id":"a","shadowed":1,"Untagged":"u"}`},
		{name: "UntaggedName", data: `{"untagged":"u"}`, want: `{}`},
		{name: "UnicodeFold", data: `{"inner":{"tagſ":["x"],"name":"a"}}`, want: `{"inner":{"name":"a"}}`},
		{name: "EscapedExact", data: `{"\u0069d":"a"}`},
		{name: "EscapedVariant", data: `{"id":"a","\u0049D":"b"}`, want: `{"id":"a"}`},
		{name: "Tag", data: `{"kind":"k","Kind":"x"}`, want: `{"kind":"k"}`},
		{name: "Skipped", data: `{"Skipped":"s","-":"s","unexported":"x"}`, want: `{}`},
		{name: "Whitespace", data: "{ \"id\" : \"a\" ,\n \"ID\" : \"b\" , \"shadowed\" : 1 }", want: `{ "id" : "a","shadowed":1}`},
		{name: "Nested", data: `{"id":"a","inner":{"name":"a","NAME":"b"},"Untagged":"u"}`, want: `{"id":"a","inner":{"name":"a"},"Untagged":"u"}`},
		{name: "Pointer", data: `{"ptr":{"Name":"b","name":"a"}}`, want: `{"ptr":{"name":"a"}}`},
		{name: "NullPointer", data: `{"ptr":null}`},
		{name: "List", data: `{"list":[{"name":"a"},{"NAME":"b","name":"c","Name":"d"},{}]}`, want: `{"list":[{"name":"a"},{"name":"c"},{}]}`},
		{name: "Array", data: `{"array":[{"name":"a","Tags":[]}]}`, want: `{"array":[{"name":"a"}]}`},
		{name: "MapKeysAreData", data: `{"by_key":{"K":{"name":"a"},"k":{"name":"b"}}}`},
		{name: "MapValues", data: `{"by_key":{"K":{"name":"a","NAME":"b"},"k":{}}}`, want: `{"by_key":{"K":{"name":"a"},"k":{}}}`},
		{name: "Recursive", data: `{"tree":{"kids":[{"kids":[{"NAME":"x"}]}]}}`, want: `{"tree":{"kids":[{"kids":[{}]}]}}`},
		{name: "Opaque", data: `{"raw":{"ID":1},"any":{"X":1},"self":{"X":1},"chain":[[]]}`},
		{name: "WrongTypeLeftToDecoder", data: `{"inner":"x","list":{"A":1},"by_key":[{"A":1}]}`},
	}
	s := shapeOf(reflect.TypeFor[*testOuter]())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			data := []byte(tt.data)
			require.True(t, json.Valid(data))
			kept, dropped := s.keep(data, "kind")
			if tt.want == "" {
				require.False(t, dropped, "%s", kept)
				require.Equal(t, &data[0], &kept[0], "kept as it is, not copied")
				return
			}
			require.True(t, dropped)
			require.Equal(t, tt.want, string(kept))
		})
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()

	got := testOuter{testBase: new(testBase)} // as the wire types' aux structs embed *plain
	data := `{"ID":"x","id":"a","Id":"y","shadowed":1,"inner":{"name":"n","NAME":"z"},"self":{"ID":1},"Untagged":"u","untagged":"v","unexported":"x"}`
	require.NoError(t, Unmarshal([]byte(data), &got, ""))
	require.Equal(t, testOuter{
		testBase: &testBase{ID: "a"},
		Shadowed: 1,
		Inner:    testInner{Name: "n"},
		Self:     testSelf{raw: `{"ID":1}`},
		Untagged: "u",
	}, got)
	require.Empty(t, got.unexported)

	var typeErr *json.UnmarshalTypeError
	require.ErrorAs(t, Unmarshal([]byte(`{"inner":"x"}`), &got, ""), &typeErr)
	require.Equal(t, "inner", typeErr.Field)
	require.ErrorAs(t, Unmarshal([]byte(`[]`), &got, ""), &typeErr)
}

// TestDecodeCleanAllocatesNothing guards the hot path: an object with no stray member is
// checked without a copy. It is not parallel: testing.AllocsPerRun refuses parallel tests.
func TestDecodeCleanAllocatesNothing(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses parallel tests
	data := []byte(`{"id":"a","inner":{"name":"n","tags":["x"]},"list":[{"name":"a"}],"by_key":{"k":{}}}`)
	s := shapeOf(reflect.TypeFor[*testOuter]())
	allocs := testing.AllocsPerRun(100, func() {
		if _, dropped := s.keep(data, ""); dropped {
			t.Fatal("dropped a member of a clean object")
		}
	})
	require.Zero(t, allocs)
}

// FuzzKeep checks that what keep leaves of a valid object is valid JSON with nothing more to
// drop, so dropping members never turns a good frame into a malformed one.
func FuzzKeep(f *testing.F) {
	f.Add([]byte(`{"id":"a","ID":"b","list":[{"NAME":"b","name":"c"},{}],"by_key":{"k":{"Name":1}}}`))
	f.Add([]byte(` { "ptr" : { "name" : "a" , "x" : [ ] } , "kind" : 1 , "tree":{"kids":[{"kids":[{"KIDS":[]}]}]}} `))

	s := shapeOf(reflect.TypeFor[*testOuter]())
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.TrimSpace(data)
		if !json.Valid(data) || data[0] != '{' {
			return
		}
		kept, _ := s.keep(data, "kind")
		if !json.Valid(kept) {
			t.Fatalf("kept invalid JSON %q of %q", kept, data)
		}
		if again, dropped := s.keep(kept, "kind"); dropped {
			t.Fatalf("keep is not a fixed point: %q then %q", kept, again)
		}
	})
}
