package receipts

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// pyObject is a JSON object to render the way Python's json.dumps(obj, sort_keys=True) does.
// Values may be nil, bool, string, int, int64, float64, []int64 or a nested pyObject.
type pyObject map[string]any

// appendPyJSON appends v rendered with sort_keys=True, separators ", " and ": ", ensure_ascii
// and Python's float repr.
func appendPyJSON(buf []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...)
	case bool:
		return strconv.AppendBool(buf, v)
	case string:
		return appendPyString(buf, v)
	case int:
		return strconv.AppendInt(buf, int64(v), 10)
	case int64:
		return strconv.AppendInt(buf, v, 10)
	case float64:
		return append(buf, pyFloatRepr(v)...)
	case []int64:
		buf = append(buf, '[')
		for i, n := range v {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = strconv.AppendInt(buf, n, 10)
		}
		return append(buf, ']')
	case pyObject:
		return appendPyObject(buf, v)
	default:
		panic(fmt.Sprintf("pyjson: unsupported type %T", v)) // a programming error in this package
	}
}

// appendPyObject renders members in sorted key order. Python sorts str keys by code point,
// which for UTF-8 is byte order, so sorting Go strings gives the same order.
func appendPyObject(buf []byte, obj pyObject) []byte {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = appendPyString(buf, k)
		buf = append(buf, ": "...)
		buf = appendPyJSON(buf, obj[k])
	}
	return append(buf, '}')
}

// appendPyString escapes like ensure_ascii=True: printable ASCII stays, the usual short escapes
// are used, everything else becomes lowercase \uXXXX with surrogate pairs above U+FFFF.
// Invalid UTF-8, which a Python str cannot hold, is rendered as U+FFFD.
func appendPyString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for _, r := range s {
		switch {
		case r == '"':
			buf = append(buf, `\"`...)
		case r == '\\':
			buf = append(buf, `\\`...)
		case r == '\n':
			buf = append(buf, `\n`...)
		case r == '\r':
			buf = append(buf, `\r`...)
		case r == '\t':
			buf = append(buf, `\t`...)
		case r == '\b':
			buf = append(buf, `\b`...)
		case r == '\f':
			buf = append(buf, `\f`...)
		case r >= 0x20 && r <= 0x7e:
			buf = append(buf, byte(r))
		case r > 0xffff:
			r -= 0x10000
			buf = fmt.Appendf(buf, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			buf = fmt.Appendf(buf, `\u%04x`, r)
		}
	}
	return append(buf, '"')
}

// pyFloatRepr is Python's repr(float): the shortest round-tripping digits, in exponent form
// when the decimal exponent is below -4 or at least 16, and always with a ".0" otherwise.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if exp := decimalExponent(f); f != 0 && (exp < -4 || exp >= 16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

// decimalExponent is the exponent of f's shortest scientific form.
func decimalExponent(f float64) int {
	s := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(s[strings.IndexByte(s, 'e')+1:])
	return exp
}
