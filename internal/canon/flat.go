package canon

// flatCanonical reports whether b, a checked JSON object, is already in
// RFC 8785 form, for the common shape it can decide without the general
// transform: a flat object (no nested object or array) without whitespace,
// its keys in ascending order, every key and string value printable ASCII
// without escapes, every number a short integer in its shortest spelling.
// For such input the transform is the identity, so transform skips it (the
// general transform reads the input into a tree and writes it back, a few
// dozen allocations for a two-member object). false only means "not
// decided here": the general transform then runs.
func flatCanonical(b []byte) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	if len(b) == 2 {
		return true
	}
	var prev []byte
	i := 1
	for {
		k, end := plainString(b, i)
		if end < 0 || (prev != nil && string(prev) >= string(k)) {
			return false
		}
		prev = k
		if end >= len(b) || b[end] != ':' {
			return false
		}
		if i = plainValue(b, end+1); i < 0 || i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i == len(b)-1
		default:
			return false
		}
	}
}

// plainString reads the string at b[i] when it is printable ASCII without
// escapes, returning its content and the index after it; end is -1
// otherwise.
func plainString(b []byte, i int) (s []byte, end int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, -1
		}
	}
	return nil, -1
}

// plainValue returns the index after the value at b[i] when it is a plain
// string, true, false, null or an integer of at most 15 digits (exact in an
// IEEE double, so its shortest spelling is its digits) without a leading
// zero or a negative zero; -1 otherwise.
func plainValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		_, end := plainString(b, i)
		return end
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '0':
		if i+1 < len(b) && isDigit(b[i+1]) {
			return -1
		}
		return i + 1
	}
	j := i
	if b[j] == '-' {
		j++
	}
	if j >= len(b) || b[j] < '1' || b[j] > '9' {
		return -1
	}
	start := j
	for j < len(b) && isDigit(b[j]) {
		j++
	}
	if j-start > 15 || (j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')) {
		return -1
	}
	return j
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
