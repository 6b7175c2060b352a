package populate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
)

func TestFollowUps(t *testing.T) {
	t.Parallel()

	ws := map[string]*watch{
		"lab.signal": {upstreamOf: []string{"stats", "energy"}},
		"lab.stats":  {upstreamOf: []string{"grade"}, targetOf: []string{"stats"}},
	}
	for _, tc := range []struct {
		payload string
		want    []queue.PopulateScheduleArgs
	}{
		{"lab.signal INSERT", []queue.PopulateScheduleArgs{{Table: "stats"}, {Table: "energy"}}},
		{"lab.signal DELETE", []queue.PopulateScheduleArgs{{Table: "stats", Cleanup: true}, {Table: "energy", Cleanup: true}}},
		{"lab.stats INSERT", []queue.PopulateScheduleArgs{{Table: "grade"}}},
		{"lab.stats TRUNCATE", []queue.PopulateScheduleArgs{{Table: "grade", Cleanup: true}, {Table: "stats", Cleanup: true}}},
		{"lab.other INSERT", nil},
	} {
		t.Run(tc.payload, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, followUps(ws, tc.payload))
		})
	}
}

func TestRestrictionWhere(t *testing.T) {
	t.Parallel()

	tbl := &Table{Name: "pair", PrimaryKey: []string{"a", "b"}}
	f, err := Restriction{"b": json.RawMessage(`"x"`), "a": json.RawMessage(`[1, 2]`)}.compile(tbl, "restriction")
	require.NoError(t, err)
	cond, args := f.where("key", []any{"pair"})
	require.Equal(t, `TRUE AND key -> $2::text = ANY($3::text[]::jsonb[]) AND key -> $4::text = ANY($5::text[]::jsonb[])`, cond)
	require.Equal(t, []any{"pair", "a", []string{"1", "2"}, "b", []string{`"x"`}}, args, "names and values are parameters")
}

func TestDecodeFunction(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name   string
		status int
		body   string
		rows   int
		err    string
	}{
		{"Rows", 200, `{"rows": [{"a": 1}, {"a": 2}]}`, 2, ""},
		{"NamedError", 422, `{"error": {"class": "KeyError", "message": "a"}}`, 0, "KeyError: a"},
		{"PlainFailure", 502, `bad gateway`, 0, "FunctionError: HTTP 502: bad gateway"},
		{"NotJSON", 200, `<html>`, 0, "FunctionError: answer is not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rows, err := decodeFunction(tc.status, []byte(tc.body))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, rows, tc.rows)
		})
	}
}
