package dag

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Integer is a whole number of a submission. A JSON integer beyond the 64-bit range (2^63,
// 1e309) decodes to the nearest 64-bit bound, which is outside every field's range, so Validate
// refuses it as out of range with the job's index (jobs[3].priority) rather than the decoder
// calling it a type error. A fraction (1.5), an exponent that is not out of range (1e2), a
// string or a boolean is not an integer: a type error, as encoding/json reports for int64.
type Integer int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *Integer) UnmarshalJSON(b []byte) error {
	lit := string(b)
	if lit == "null" {
		return nil
	}
	v, err := strconv.ParseInt(lit, 10, 64)
	if err == nil {
		*n = Integer(v)
		return nil
	}
	if errors.Is(err, strconv.ErrRange) || beyond64Bits(lit) {
		*n = Integer(math.MaxInt64)
		if strings.HasPrefix(lit, "-") {
			*n = Integer(math.MinInt64)
		}
		return nil
	}
	return &json.UnmarshalTypeError{Value: jsonKind(lit), Type: reflect.TypeFor[int64](), Offset: int64(len(b))}
}

// beyond64Bits reports whether lit is a JSON number with a fraction or exponent whose value is
// outside the 64-bit range.
func beyond64Bits(lit string) bool {
	if lit == "" || !strings.ContainsAny(lit[:1], "-0123456789") {
		return false
	}
	f, err := strconv.ParseFloat(lit, 64)
	return errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) || err == nil && math.Abs(f) >= math.MaxInt64
}

// jsonKind names what lit is, as encoding/json's type errors do ("number 1.5", "string").
func jsonKind(lit string) string {
	switch {
	case strings.HasPrefix(lit, `"`):
		return "string"
	case lit == "true" || lit == "false":
		return "bool"
	case strings.HasPrefix(lit, "{"):
		return "object"
	case strings.HasPrefix(lit, "["):
		return "array"
	}
	return "number " + lit
}
