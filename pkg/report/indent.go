package report

import "bytes"

// appendIndented appends src, compact JSON as json.Marshal writes it, to
// dst indented as json.Indent indents it: each element on a line of its own
// after prefix and one indent per level, ": " after a name, an empty object
// or array kept as {} or []. json.Indent checks its input with the full
// scanner a byte at a time, a fifth of list -A's CPU over thousands of
// objects (17 MB of JSON); input Marshal wrote needs no check, only the
// strings told apart. Whitespace between tokens is dropped, as Indent does.
// FuzzIndentAgreesWithEncodingJSON holds the two together.
func appendIndented(dst *bytes.Buffer, src []byte, prefix, indent string) {
	depth := 0
	// lines holds a newline, prefix and the indents of the deepest level
	// met so far: a line's start is one write of its head, not one per level.
	lines := append([]byte{'\n'}, prefix...)
	newline := func() {
		n := 1 + len(prefix) + depth*len(indent)
		for len(lines) < n {
			lines = append(lines, indent...)
		}
		dst.Write(lines[:n])
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			end := stringEnd(src, i)
			dst.Write(src[i:end])
			i = end - 1
		case '{', '[':
			dst.WriteByte(c)
			if next := nextToken(src, i+1); next < len(src) && (src[next] == '}' || src[next] == ']') {
				dst.WriteByte(src[next])
				i = next
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst.WriteByte(c)
		case ',':
			dst.WriteByte(c)
			newline()
		case ':':
			dst.WriteString(": ")
		case ' ', '\t', '\n', '\r':
		default:
			dst.WriteByte(c)
		}
	}
}

// stringEnd is the index just past the string that begins at src[start]:
// the first quote not escaped, found by IndexByte (a string's bytes are most
// of a report's), escaped when an odd run of backslashes comes before it.
func stringEnd(src []byte, start int) int {
	for i := start + 1; i < len(src); i++ {
		q := bytes.IndexByte(src[i:], '"')
		if q < 0 {
			break
		}
		i += q
		backslashes := 0
		for j := i - 1; j > start && src[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i + 1
		}
	}
	return len(src)
}

// nextToken is the index of the first byte at or after i that is not
// whitespace.
func nextToken(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	return i
}
