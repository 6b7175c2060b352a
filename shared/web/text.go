package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"drover.dev/shared/problem"
)

// Postgres stores no NUL byte in text or jsonb and refuses invalid UTF-8, and it says so with an
// error the API could only answer 500 to; encoding/json silently turns invalid UTF-8 and an
// escaped lone UTF-16 surrogate ("\ud800") into U+FFFD, so a client's text would be stored
// rewritten. So no request text reaches a handler with any of them: query parameters and path
// segments are checked by a middleware every server runs, JSON bodies by DecodeJSON.

// CheckText reports a problem naming field when s holds a NUL byte or is not valid UTF-8.
func CheckText(field, s string) error {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return problem.Invalidf(field, "must not hold a NUL byte")
	case !utf8.ValidString(s):
		return problem.Invalidf(field, "must be valid UTF-8")
	}
	return nil
}

// checkParams rejects a request whose path parameters, query parameter names or values hold a
// NUL byte or invalid UTF-8, before any handler reads them.
func checkParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		for _, p := range c.PathValues() {
			if err := checkPathValue(p.Name, p.Value); err != nil {
				return err
			}
		}
		query, err := url.ParseQuery(c.Request().URL.RawQuery)
		if err != nil {
			return problem.Invalidf("", "the query string is malformed: %v", err)
		}
		for name, values := range query {
			if CheckText("query", name) != nil {
				return problem.Invalidf("query", "a query parameter name must be valid UTF-8 with no NUL byte")
			}
			for _, v := range values {
				if err := CheckText(name, v); err != nil {
					return err
				}
			}
		}
		return next(c)
	}
}

// checkPathValue checks a path parameter as the router left it and, when it is still escaped (the
// router matches on the escaped path when the request's differs from the canonical encoding),
// unescaped as well.
func checkPathValue(name, value string) error {
	if err := CheckText(name, value); err != nil {
		return err
	}
	if strings.IndexByte(value, '%') < 0 {
		return nil
	}
	unescaped, err := url.PathUnescape(value)
	if err != nil {
		return problem.Invalidf(name, "holds a malformed escape")
	}
	return CheckText(name, unescaped)
}

// CheckJSON reports the first string (member name or value) of the JSON value raw, read from
// the request field named field, that holds a NUL byte, invalid UTF-8 or an escaped lone
// surrogate, or otherwise would not decode to the text it spells, naming it by its path
// ("jobs[2].env"). encoding/json would silently replace what it cannot decode, so the raw text of
// each string is checked, not its value. DecodeJSON checks every body with it.
func CheckJSON(field string, raw []byte) error {
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u0000`)) &&
		!bytes.Contains(raw, []byte(`\ud`)) && !bytes.Contains(raw, []byte(`\uD`)) {
		return nil // no string can be at fault: the common case costs a few passes
	}
	w := jsonWalker{dec: json.NewDecoder(bytes.NewReader(raw)), raw: raw, prefix: field}
	return w.walk()
}

// jsonWalker follows a JSON document token by token, keeping the path to the current value.
type jsonWalker struct {
	dec    *json.Decoder
	raw    []byte
	prefix string
	path   []jsonStep
}

// jsonStep is one level of the path: an array with its next index, or an object with the name of
// the member being read (and whether that name has been read yet).
type jsonStep struct {
	array   bool
	index   int
	name    string
	hasName bool
}

func (w *jsonWalker) walk() error {
	for {
		start := w.dec.InputOffset()
		tok, err := w.dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // malformed JSON is decodeProblem's to report
		}
		if err := w.step(tok, w.raw[start:w.dec.InputOffset()]); err != nil {
			return err
		}
	}
}

// step handles one token; text is the raw input it was read from.
func (w *jsonWalker) step(tok json.Token, text []byte) error {
	top := len(w.path) - 1
	if d, ok := tok.(json.Delim); ok {
		switch d {
		case '{', '[':
			w.path = append(w.path, jsonStep{array: d == '['})
		default:
			w.path = w.path[:top]
			w.valueDone()
		}
		return nil
	}
	if top >= 0 && !w.path[top].array && !w.path[top].hasName {
		name, _ := tok.(string)
		if err := checkJSONString(name, text); err != nil {
			return problem.Invalidf(w.field(), "a member name %s", err)
		}
		w.path[top].name, w.path[top].hasName = name, true
		return nil
	}
	if s, ok := tok.(string); ok {
		if err := checkJSONString(s, text); err != nil {
			return problem.Invalidf(w.field(), "%s", err)
		}
	}
	w.valueDone()
	return nil
}

// fieldAt returns the path of the value of raw that encoding/json's decoder was reading when it
// stopped at offset: an UnmarshalTypeError's Offset, which is the end of a scalar, or just past the
// bracket that opens an object or an array.
func fieldAt(raw []byte, offset int64) (string, bool) {
	w := jsonWalker{dec: json.NewDecoder(bytes.NewReader(raw)), raw: raw}
	for {
		start := w.dec.InputOffset()
		tok, err := w.dec.Token()
		if err != nil {
			return "", false
		}
		top := len(w.path) - 1
		d, delim := tok.(json.Delim)
		name := !delim && top >= 0 && !w.path[top].array && !w.path[top].hasName
		if !name && (!delim || d == '{' || d == '[') && w.dec.InputOffset() == offset {
			return w.field(), true
		}
		_ = w.step(tok, raw[start:w.dec.InputOffset()]) // CheckJSON accepted raw already
	}
}

// valueDone moves the innermost container past the value just read.
func (w *jsonWalker) valueDone() {
	if top := len(w.path) - 1; top >= 0 {
		if w.path[top].array {
			w.path[top].index++
		} else {
			w.path[top].hasName = false
		}
	}
}

// field is the path of the value being read; while an object's member name is read, the path of
// the object.
func (w *jsonWalker) field() string {
	var b strings.Builder
	b.WriteString(w.prefix)
	for _, s := range w.path {
		switch {
		case s.array:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case s.hasName:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		}
	}
	return b.String()
}

// checkJSONString checks a decoded string for NUL, and its raw text (with its quotes) for invalid
// UTF-8 and lone surrogates; and that the text decodes to s exactly, so a client's string is
// stored as it was sent or not at all.
func checkJSONString(s string, text []byte) error {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return errors.New("must not hold a NUL byte")
	case !utf8.Valid(text):
		return errors.New("must be valid UTF-8")
	}
	exact, err := unquoteJSON(text)
	switch {
	case err != nil:
		return err
	case exact != s:
		return errors.New("does not decode to the text it spells")
	}
	return nil
}

// unquoteJSON decodes a JSON string literal that encoding/json has accepted (text may start with
// the separator read before it), refusing what it would replace by U+FFFD: a \u escape of a UTF-16
// surrogate that is not a high one followed by a low one.
func unquoteJSON(text []byte) (string, error) {
	first, last := bytes.IndexByte(text, '"'), bytes.LastIndexByte(text, '"')
	if first < 0 || last <= first {
		return "", errors.New("must be a JSON string")
	}
	text = text[first+1 : last]
	var b strings.Builder
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\\')
		if i < 0 {
			b.Write(text)
			break
		}
		b.Write(text[:i])
		text = text[i:]
		if len(text) < 2 {
			return "", errors.New("ends inside an escape")
		}
		if text[1] != 'u' {
			b.WriteByte(unescaped[text[1]])
			text = text[2:]
			continue
		}
		r, n, err := unicodeEscape(text)
		if err != nil {
			return "", err
		}
		b.WriteRune(r)
		text = text[n:]
	}
	return b.String(), nil
}

// unescaped maps the character after a backslash to the byte it stands for.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unicodeEscape decodes the \uXXXX escape text starts with, and the low surrogate that must follow
// a high one; it returns the rune and the bytes read.
func unicodeEscape(text []byte) (rune, int, error) {
	r, ok := hex4(text)
	if !ok {
		return 0, 0, errors.New("holds a malformed \\u escape")
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, 0, fmt.Errorf("must not hold a lone UTF-16 low surrogate (\\u%04x)", r)
	case r < 0xD800 || r > 0xDBFF:
		return r, 6, nil
	}
	low, ok := hex4(text[6:])
	if !ok || low < 0xDC00 || low > 0xDFFF {
		return 0, 0, fmt.Errorf("must not hold a lone UTF-16 high surrogate (\\u%04x)", r)
	}
	return utf16.DecodeRune(r, low), 12, nil
}

// hex4 reads the \uXXXX escape text starts with.
func hex4(text []byte) (rune, bool) {
	if len(text) < 6 || text[0] != '\\' || text[1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(text[2:6]), 16, 16)
	return rune(v), err == nil
}
