package populate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
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
