package jsonwire

// eachChild calls fn with each member of the object in data (its quoted key and raw value), or
// each element of the array (a nil key), and the index in data just past the value. data must
// be valid JSON (checkObject has passed, or encoding/json handed it over).
func eachChild(data []byte, fn func(key, value []byte, end int)) {
	i := skipSpace(data, 0)
	object := data[i] == '{'
	i++ // past '{' or '['
	for {
		i = skipSpace(data, i)
		if data[i] == '}' || data[i] == ']' {
			return
		}
		var key []byte
		if object {
			keyEnd := skipString(data, i)
			key = data[i:keyEnd]
			i = skipSpace(data, keyEnd) + 1 // past ':'
			i = skipSpace(data, i)
		}
		valueEnd := skipValue(data, i)
		fn(key, data[i:valueEnd], valueEnd)
		i = skipSpace(data, valueEnd)
		if data[i] == ',' {
			i++
		}
	}
}

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at data[i] == '"'.
func skipString(data []byte, i int) int {
	for i++; data[i] != '"'; i++ {
		if data[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index just past the value starting at data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch data[i] {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
	default:
		for i < len(data) && !isDelimiter(data[i]) {
			i++
		}
		return i
	}
}

// isDelimiter reports bytes that end a literal or number.
func isDelimiter(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
