package populate

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"drover.dev/shared/problem"
)

func TestRestrictionValuesMatchKeyColumnTypes(t *testing.T) {
	t.Parallel()

	tbl := &Table{Name: "session", PrimaryKey: []string{"subject_id", "small", "name", "flag", "score", "other"},
		keyKinds: map[string]valueKind{
			"subject_id": kindOf(pgtype.Int8OID), "small": kindOf(pgtype.Int2OID), "name": kindOf(pgtype.TextOID),
			"flag": kindOf(pgtype.BoolOID), "score": kindOf(pgtype.NumericOID), "other": kindOf(pgtype.ByteaOID),
		}}
	for _, tc := range []struct {
		name, column, value, err string
	}{
		{"BigintInteger", "subject_id", `3`, ""},
		{"BigintMax", "subject_id", `9223372036854775807`, ""},
		{"BigintMin", "subject_id", `-9223372036854775808`, ""},
		{"BigintList", "subject_id", `[1, 2, 3]`, ""},
		{"BigintString", "subject_id", `"3"`, "must be an integer for a bigint key column, not a string"},
		{"BigintFraction", "subject_id", `1.5`, "must be an integer for a bigint key column, not 1.5"},
		{"BigintBoolean", "subject_id", `true`, "not a boolean"},
		{"BigintTwoToThe63", "subject_id", `9223372036854775808`, "out of range for a bigint key column"},
		{"BigintListWithAString", "subject_id", `[1, "x"]`, "value 1: must be an integer"},
		{"SmallintRange", "small", `40000`, "out of range for a smallint key column"},
		{"TextString", "name", `"ann"`, ""},
		{"TextNumber", "name", `3`, "must be a string for a text-like key column, not a number"},
		{"BooleanBoolean", "flag", `false`, ""},
		{"BooleanString", "flag", `"true"`, "must be a boolean"},
		{"NumericFraction", "score", `1.5`, ""},
		{"NumericString", "score", `"1.5"`, "must be a number"},
		{"UnclassifiedAnyScalar", "other", `"\\x00"`, ""},
		{"UnclassifiedObject", "other", `{"a": 1}`, "values must be strings, numbers or booleans, not an object"},
		{"Null", "name", `null`, "not null"},
		{"EmptyList", "subject_id", `[]`, "must hold 1 to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Restriction{tc.column: json.RawMessage(tc.value)}.compile(tbl, "restriction")
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
			var p *problem.Error
			require.ErrorAs(t, err, &p)
			require.Equal(t, problem.Unprocessable, p.Code)
			require.Equal(t, "restriction."+tc.column, p.Field)
		})
	}
}
