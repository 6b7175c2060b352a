// Package logging builds the slog logger every Drover process uses: text for a person at a
// terminal, JSON for everything else.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"drover.dev/shared/config"
)

// durationsInMS writes every duration as milliseconds under its key with an _ms suffix
// ("duration_ms": 12.5), so neither a person nor a log query meets raw nanoseconds, which is what
// the JSON handler would otherwise print.
func durationsInMS(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	ms := float64(a.Value.Duration().Microseconds()) / 1000
	return slog.Float64(a.Key+"_ms", ms)
}

// New returns a logger writing to w at the given level ("debug", "info", "warn", "error") in the
// given format ("text", "json", or "auto": text when w is a terminal). A line logged with the
// context of a traced piece of work carries its trace_id and span_id.
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: durationsInMS}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(traceHandler{slog.NewTextHandler(w, opts)}), nil
	case "json":
		return slog.New(traceHandler{slog.NewJSONHandler(w, opts)}), nil
	case "auto", "":
		if config.IsTerminal(w) {
			return slog.New(traceHandler{slog.NewTextHandler(w, opts)}), nil
		}
		return slog.New(traceHandler{slog.NewJSONHandler(w, opts)}), nil
	default:
		return nil, fmt.Errorf("log format %q: want text, json or auto", format)
	}
}
