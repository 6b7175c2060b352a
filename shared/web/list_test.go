package web

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/shared/problem"
)

func listContext(t *testing.T, query string) *echo.Context {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/v1/things?"+query, nil)
	return echo.New().NewContext(req, httptest.NewRecorder())
}

type thingKey struct {
	Name string `json:"n"`
	ID   int64  `json:"i"`
}

func TestListPagesFollowTheirCursor(t *testing.T) {
	t.Parallel()

	p, err := ParseListParams(listContext(t, ""))
	require.NoError(t, err)
	require.Equal(t, DefaultLimit, p.Limit)
	var key thingKey
	has, err := p.After(&key)
	require.NoError(t, err)
	require.False(t, has, "the first page starts nowhere")

	key = thingKey{Name: "é", ID: 1 << 62}
	page := NewPage([]thingKey{{Name: "a"}, key}, ListParams{Limit: 2}, func(k thingKey) any { return k })
	require.NotEmpty(t, page.NextCursor, "a full page has a next one")
	p, err = ParseListParams(listContext(t, "limit=2&cursor="+page.NextCursor))
	require.NoError(t, err)
	var got thingKey
	has, err = p.After(&got)
	require.NoError(t, err)
	require.True(t, has)
	require.Equal(t, key, got)

	last := NewPage([]thingKey{key}, ListParams{Limit: 2}, func(k thingKey) any { return k })
	require.Empty(t, last.NextCursor, "a page short of its limit is the last")
	require.NotNil(t, NewPage[thingKey](nil, p, nil).Items, "an empty list is [], never null")
}

func TestListParamsRejectBadInput(t *testing.T) {
	t.Parallel()

	cursor := func(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }
	tests := []struct{ name, query, field string }{
		{"LimitZero", "limit=0", "limit"},
		{"LimitPastMax", "limit=1001", "limit"},
		{"LimitPadded", "limit=010", "limit"},
		{"LimitNotANumber", "limit=ten", "limit"},
		{"CursorNotBase64", "cursor=%21", "cursor"},
		{"CursorNotJSON", "cursor=" + cursor("{"), "cursor"},
		{"CursorWithNUL", "cursor=" + cursor(`{"n":"\u0000"}`), "cursor.n"},
		{"CursorWithLoneSurrogate", "cursor=" + cursor(`{"n":"\ud800"}`), "cursor.n"},
		{"CursorOfAnotherList", "cursor=" + cursor(`{"other":1}`), "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := ParseListParams(listContext(t, tt.query))
			if err == nil {
				var key thingKey
				_, err = p.After(&key)
			}
			var pe *problem.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, problem.Invalid, pe.Code)
			require.Equal(t, tt.field, pe.Field)
		})
	}
}

func TestIDListParamsTakeOnlyPositiveIDCursors(t *testing.T) {
	t.Parallel()

	cursor := func(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }
	for _, good := range []string{"1", "9223372036854775807"} {
		_, id, err := ParseIDListParams(listContext(t, "cursor="+cursor(good)))
		require.NoError(t, err, good)
		require.Equal(t, good, strconv.FormatInt(id, 10))
	}
	for _, bad := range []string{"0", "-1", "null", "9223372036854775808", "1e309", "1.5", `"1"`, "true"} {
		_, _, err := ParseIDListParams(listContext(t, "cursor="+cursor(bad)))
		var pe *problem.Error
		require.ErrorAs(t, err, &pe, bad)
		require.Equal(t, "cursor", pe.Field, bad)
	}
}

func TestQueryBoolTakesOnlyTrueOrFalse(t *testing.T) {
	t.Parallel()

	for query, want := range map[string]*bool{"": nil, "flag=": nil, "flag=true": new(true), "flag=false": new(false)} {
		got, err := QueryBool(listContext(t, query), "flag")
		require.NoError(t, err, query)
		require.Equal(t, want, got, query)
	}
	for _, value := range []string{"1", "0", "TRUE", "True", "t", "yes", "%00", "true%20"} {
		t.Run(value, func(t *testing.T) {
			t.Parallel()
			_, err := QueryBool(listContext(t, "flag="+value), "flag")
			var pe *problem.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, problem.Invalid, pe.Code)
			require.Equal(t, "flag", pe.Field)
		})
	}
}
