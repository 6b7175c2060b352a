package populate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5/pgtype"
)

// Key is one primary key of a computed table, column name to value, as the jobs table's key
// column holds it. Numbers are json.Number so that bigint keys keep every digit.
type Key map[string]any

// UnmarshalJSON decodes a key keeping numbers exact.
func (k *Key) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	m := map[string]any{}
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("decode key: %w", err)
	}
	*k = m
	return nil
}

// Int64 returns the integer value of column name.
func (k Key) Int64(name string) (int64, error) {
	switch v := k[name].(type) {
	case json.Number:
		return v.Int64()
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	default:
		return 0, fmt.Errorf("key column %q is %T, not an integer", name, k[name])
	}
}

// String returns the value of column name as text.
func (k Key) String(name string) string { return fmt.Sprint(k[name]) }

// scanKey decodes a jsonb key read as bytes.
func scanKey(raw []byte) (Key, error) {
	var k Key
	if err := k.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return k, nil
}

// valueKind is the JSON type a key column's values take in the jobs table's key, which
// jsonb_build_object derives from the column's SQL type: integers and other numbers as JSON
// numbers, booleans as booleans, text, uuid and times as strings.
type valueKind struct {
	// name is integer, number, boolean or string; empty (a type we do not classify) accepts any
	// scalar.
	name string
	// typ is the SQL type, for messages.
	typ string
	// min and max bound an integer column.
	min, max int64
}

// kindOf classifies the SQL type oid.
func kindOf(oid uint32) valueKind {
	switch oid {
	case pgtype.Int2OID:
		return valueKind{name: "integer", typ: "smallint", min: math.MinInt16, max: math.MaxInt16}
	case pgtype.Int4OID:
		return valueKind{name: "integer", typ: "integer", min: math.MinInt32, max: math.MaxInt32}
	case pgtype.Int8OID:
		return valueKind{name: "integer", typ: "bigint", min: math.MinInt64, max: math.MaxInt64}
	case pgtype.Float4OID, pgtype.Float8OID, pgtype.NumericOID:
		return valueKind{name: "number", typ: "numeric"}
	case pgtype.BoolOID:
		return valueKind{name: "boolean", typ: "boolean"}
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.UUIDOID,
		pgtype.DateOID, pgtype.TimestampOID, pgtype.TimestamptzOID:
		return valueKind{name: "string", typ: "text-like"}
	}
	return valueKind{}
}

// check reports why x (a decoded JSON value with json.Number numbers) cannot be a value of the
// column, or nil.
func (k valueKind) check(x any) error {
	var ok bool
	switch k.name {
	case "":
		switch x.(type) {
		case string, json.Number, bool:
			return nil
		}
		return fmt.Errorf("values must be strings, numbers or booleans, not %s", jsonType(x))
	case "integer":
		return k.checkInteger(x)
	case "number":
		_, ok = x.(json.Number)
	case "boolean":
		_, ok = x.(bool)
	case "string":
		_, ok = x.(string)
	}
	if !ok {
		return fmt.Errorf("must be %s for a %s key column, not %s", jsonName(k.name), k.typ, jsonType(x))
	}
	return nil
}

func (k valueKind) checkInteger(x any) error {
	n, ok := x.(json.Number)
	if !ok {
		return fmt.Errorf("must be an integer for a %s key column, not %s", k.typ, jsonType(x))
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if errors.Is(err, strconv.ErrRange) || (err == nil && (i < k.min || i > k.max)) {
		return fmt.Errorf("%s is out of range for a %s key column (%d to %d)", n, k.typ, k.min, k.max)
	}
	if err != nil {
		return fmt.Errorf("must be an integer for a %s key column, not %s", k.typ, n)
	}
	return nil
}

// jsonName is kind with its article.
func jsonName(kind string) string { return "a " + kind }

// jsonType names x's JSON type.
func jsonType(x any) string {
	switch x.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "an array"
	}
	return "an object"
}
