package receipts

import (
	"fmt"
	"time"
)

// FormatTime renders t the way pydantic serialises a datetime: seconds precision plus exactly
// six fraction digits when the microseconds are not zero, then "Z" for UTC or the offset.
// Nanoseconds below a microsecond are dropped, as Python datetimes cannot hold them.
func FormatTime(t time.Time) string {
	buf := t.AppendFormat(nil, "2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		buf = fmt.Appendf(buf, ".%06d", us)
	}
	if _, offset := t.Zone(); offset == 0 {
		return string(append(buf, 'Z'))
	}
	return string(t.AppendFormat(buf, "-07:00"))
}

// ParseTime reads an RFC 3339 timestamp as a receipt carries it, truncated to microseconds so
// that FormatTime gives back the text the signer signed.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse timestamp %q: %w", s, err)
	}
	return t.Truncate(time.Microsecond), nil
}
