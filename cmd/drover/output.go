package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// column is one column of a table, or one line of a record: a header and the dotted key of the
// value in the item.
type column struct {
	header, key string
}

func cols(pairs ...string) []column {
	out := make([]column, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, column{pairs[i], pairs[i+1]})
	}
	return out
}

// printer writes answers as tables or, with -o json, as the services' JSON.
type printer struct {
	w    io.Writer
	json bool
}

// list prints a page's items ({"items": [...]}) or an array as a table, or the JSON as it came.
func (p printer) list(raw []byte, columns []column) error {
	if p.json {
		return p.raw(raw)
	}
	var page struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		if err := json.Unmarshal(raw, &page.Items); err != nil {
			return fmt.Errorf("decode the list: %w", err)
		}
	}
	p.table(page.Items, columns)
	return nil
}

// table prints items under their headers.
func (p printer) table(items []map[string]any, columns []column) {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	headers := make([]string, len(columns))
	for i, c := range columns {
		headers[i] = strings.ToUpper(c.header)
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, item := range items {
		cells := make([]string, len(columns))
		for i, c := range columns {
			cells[i] = format(lookup(item, c.key))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// record prints one object as "header: value" lines, or the JSON as it came.
func (p printer) record(raw []byte, fields []column) error {
	if p.json {
		return p.raw(raw)
	}
	var item map[string]any
	if err := json.Unmarshal(raw, &item); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	p.fields(item, fields)
	return nil
}

func (p printer) fields(item map[string]any, fields []column) {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	for _, f := range fields {
		fmt.Fprintf(tw, "%s:\t%s\n", f.header, format(lookup(item, f.key)))
	}
	_ = tw.Flush()
}

// raw prints JSON indented.
func (p printer) raw(raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		_, err = p.w.Write(raw)
		return err
	}
	buf.WriteByte('\n')
	_, err := p.w.Write(buf.Bytes())
	return err
}

// value prints v as JSON (-o json) and nothing otherwise; for commands whose table output is
// built by hand.
func (p printer) value(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return p.raw(raw)
}

// lookup finds a dotted key ("counts.completed") in item.
func lookup(item map[string]any, key string) any {
	var v any = item
	for part := range strings.SplitSeq(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

// format writes a JSON value for a table cell: times to the second in local time, whole numbers
// without decimals, objects as sorted k=v pairs.
func format(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t.Local().Format("2006-01-02 15:04:05")
		}
		if v == "" {
			return "-"
		}
		return v
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	case bool:
		return strconv.FormatBool(v)
	case map[string]any:
		if len(v) == 0 {
			return "-"
		}
		parts := make([]string, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, k+"="+format(v[k]))
		}
		return strings.Join(parts, " ")
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = format(e)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}
