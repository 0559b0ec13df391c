package secretscan

// A credential can travel hex-encoded (a dumped config, xxd output, a
// "0x…" literal). A run of hex digits long enough to hold a key, that
// decodes to printable text, is decoded and scanned like any text; a
// secret found in it is reported over the hex digits that encode it.
// Hashes and random bytes in hex decode to unprintable bytes and cost
// one pass over the run.

// minHexRun is 20 bytes of text: shorter than any key the rules find
// with its prefix. maxHexRun bounds the text decoded (a private key's
// PEM block in hex fits).
const (
	minHexRun = 40
	maxHexRun = 16 << 10
)

// appendHex adds the secrets hex-encoded in the token text[i:j].
func (rs *Rules) appendHex(hits []Hit, text string, i, j int, s *scratch) []Hit {
	if j-i > 2 && text[i] == '0' && (text[i+1] == 'x' || text[i+1] == 'X') {
		i += 2
	}
	n := j - i
	if n < minHexRun || n > maxHexRun || n%2 != 0 {
		return hits
	}
	for k := i; k < j; k++ {
		if !isHexDigit(text[k]) {
			return hits
		}
	}
	s.hex = s.hex[:0]
	for k := i; k < j; k += 2 {
		c := unhex(text[k])<<4 | unhex(text[k+1])
		if (c < 0x20 || c > 0x7e) && c != '\n' && c != '\r' && c != '\t' {
			return hits
		}
		s.hex = append(s.hex, c)
	}
	if s.inner == nil {
		s.inner = rs.newScratch()
		s.inner.noHex = true
	}
	for _, h := range rs.scanText(unsafeString(s.hex), s.inner) {
		hits = append(hits, Hit{Rule: h.Rule, Start: i + 2*h.Start, End: i + 2*h.End})
	}
	return hits
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
