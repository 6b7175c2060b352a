package populate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"drover.dev/shared/problem"
)

// Restriction limits an operation to keys whose columns take the given values: column name to a
// JSON scalar or an array of scalars (any of them). Columns must be primary-key columns and values
// become bind parameters: a restriction from the network never becomes SQL text.
type Restriction map[string]json.RawMessage

// MaxRestrictionValues bounds the values of one restriction column.
const MaxRestrictionValues = 10_000

// filter is a validated restriction: per column, the JSON texts of the accepted values.
type filter struct {
	columns []string
	values  [][]string
}

// compile validates r against t: every column a primary-key column, every value of the JSON type
// the column takes in the key (a value of another type could never match, so it is refused
// rather than answered with nothing). field names the request field in problems.
func (r Restriction) compile(t *Table, field string) (filter, error) {
	var f filter
	cols := make([]string, 0, len(r))
	for c := range r {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	for _, c := range cols {
		if !t.hasPK(c) {
			return f, problem.Unprocessablef(field+"."+c, "not a primary-key column of %s (key: %v)", t.Name, t.PrimaryKey)
		}
		vals, err := scalars(r[c], t.keyKinds[c])
		if err != nil {
			return f, problem.Unprocessablef(field+"."+c, "%s", err)
		}
		f.columns, f.values = append(f.columns, c), append(f.values, vals)
	}
	return f, nil
}

// scalars returns the canonical JSON of each value in raw, one scalar or a non-empty array of
// scalars, each checked against kind.
func scalars(raw json.RawMessage, kind valueKind) ([]string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	list, isList := v.([]any)
	if !isList {
		list = []any{v}
	}
	if len(list) == 0 || len(list) > MaxRestrictionValues {
		return nil, fmt.Errorf("must hold 1 to %d values", MaxRestrictionValues)
	}
	out := make([]string, len(list))
	for i, x := range list {
		if err := kind.check(x); err != nil {
			if isList {
				return nil, fmt.Errorf("value %d: %w", i, err)
			}
			return nil, err
		}
		b, _ := json.Marshal(x)
		out[i] = string(b)
	}
	return out, nil
}

// where returns the SQL condition on the jsonb key expression keyExpr, numbering its parameters
// from len(args)+1, and args extended with them.
func (f filter) where(keyExpr string, args []any) (string, []any) {
	cond := "TRUE"
	for i, c := range f.columns {
		args = append(args, c, f.values[i])
		n := len(args)
		cond += " AND " + keyExpr + " -> $" + strconv.Itoa(n-1) + "::text = ANY($" + strconv.Itoa(n) + "::text[]::jsonb[])"
	}
	return cond, args
}

// restricts reports whether f matches less than every key.
func (f filter) restricts() bool { return len(f.columns) > 0 }
