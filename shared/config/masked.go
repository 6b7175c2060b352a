package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
)

// Masked returns the values of spec as log attributes keyed by variable name (without prefix).
// Fields tagged secret:"true" are masked: a URL keeps everything but its password, anything else
// shows only whether it is set.
func Masked(spec any) []slog.Attr {
	v := reflect.Indirect(reflect.ValueOf(spec))
	var attrs []slog.Attr
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if f.Anonymous && fv.Kind() == reflect.Struct {
			attrs = append(attrs, Masked(fv.Addr().Interface())...)
			continue
		}
		name := f.Tag.Get("envconfig")
		if name == "" || !f.IsExported() {
			continue
		}
		value := fmt.Sprint(fv.Interface())
		if f.Tag.Get("secret") == "true" {
			value = mask(value, fv)
		}
		attrs = append(attrs, slog.String(name, value))
	}
	return attrs
}

func mask(value string, fv reflect.Value) string {
	if u, err := url.Parse(value); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Redacted()
	}
	if fv.IsZero() || (fv.Kind() == reflect.Slice && fv.Len() == 0) {
		return "(unset)"
	}
	return "(set)"
}
