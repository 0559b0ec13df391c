package breaker

import "bytes"

// A turn's fingerprint needs only the last few entries of a request's
// history, which can be megabytes long. tailOf finds them with a
// skipping scan that never decodes what it passes over; only the entries
// it returns are decoded. It does not validate: the gateway has parsed
// the body already, and on bytes it cannot follow it returns nothing,
// which the breaker counts as a turn without tool calls.

// maxTail is how many of the history's last entries are kept: the last
// assistant turn and the tool results after it fit (a Responses history
// has one item per call and one per result).
const maxTail = 24

// span is an entry's bytes in the body: body[start:end].
type span struct{ start, end int }

// tail is the last entries of a history array, oldest first.
type tail struct {
	spans [maxTail]span
	n     int  // entries kept, at most maxTail
	total int  // entries in the history
	first span // the history's first entry
}

func (t *tail) add(s span) {
	t.total++
	if t.n == 0 {
		t.first = s
	}
	if t.n < maxTail {
		t.spans[t.n] = s
		t.n++
		return
	}
	copy(t.spans[:], t.spans[1:])
	t.spans[maxTail-1] = s
}

// tailOf returns the last entries of the top-level array member named
// member of the JSON object in body; ok is false when body is not an
// object, has no such array, or cannot be followed.
func tailOf(body []byte, member string) (t tail, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return t, false
	}
	i++
	found := false
	for {
		i = skipSpace(body, i)
		if i >= len(body) {
			return t, false
		}
		if body[i] == '}' {
			return t, found
		}
		if body[i] == ',' {
			i = skipSpace(body, i+1)
		}
		if i >= len(body) || body[i] != '"' {
			return t, false
		}
		keyEnd := skipString(body, i)
		if keyEnd < 0 {
			return t, false
		}
		isMember := keyEnd-i-2 == len(member) && string(body[i+1:keyEnd-1]) == member
		i = skipSpace(body, keyEnd)
		if i >= len(body) || body[i] != ':' {
			return t, false
		}
		i = skipSpace(body, i+1)
		if isMember && i < len(body) && body[i] == '[' {
			// A repeated member: the last one wins, as in encoding/json.
			t, found = tail{}, true
			if i = arrayTail(body, i, &t); i < 0 {
				return tail{}, false
			}
			continue
		}
		if i = skipValue(body, i); i < 0 {
			return t, false
		}
	}
}

// arrayTail adds the elements of the array at body[i] to t and returns
// the index after it, or -1.
func arrayTail(body []byte, i int, t *tail) int {
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == ']' {
		return i + 1
	}
	for i < len(body) {
		end := skipValue(body, i)
		if end < 0 {
			return -1
		}
		t.add(span{i, end})
		i = skipSpace(body, end)
		if i >= len(body) {
			return -1
		}
		switch body[i] {
		case ']':
			return i + 1
		case ',':
			i = skipSpace(body, i+1)
		default:
			return -1
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a
// quote), or -1. Short strings (keys, types) are walked byte by byte;
// past 16 bytes it jumps from quote to quote (IndexByte is vectorised):
// a quote ends the string unless an odd number of backslashes precede it.
func skipString(b []byte, i int) int {
	start := i + 1
	for i = start; i < len(b) && i < start+16; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		k := i + j
		n := 0
		for m := k - 1; m >= start && b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return k + 1
		}
		i = k + 1
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	start := i
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\n', '\r', '\t':
			if i == start {
				return -1
			}
			return i
		}
		i++
	}
	return -1
}
