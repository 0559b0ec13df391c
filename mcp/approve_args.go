package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// How an approval's question shows the arguments the agent chose. A
// prefix of the canonical (key-sorted) object would let an agent push the
// argument that matters past the cut with a long one whose name sorts
// first, so a question too long for the whole object names every
// argument and cuts each value on its own, and says that it did.

const (
	// questionArgs bounds the whole object in a chat line or an
	// elicitation; perValueArgs each value when the whole does not fit.
	questionArgs, perValueArgs = 600, 120
	// storedPerValue bounds each value kept for the link's page and the
	// dashboard when the arguments exceed maxShownArgs.
	storedPerValue = 512
	// maxArgNames bounds how many arguments a question names; more are
	// counted ("… N more arguments").
	maxArgNames = 64
	maxArgName  = 80
)

// argsExcerpt shows canonical arguments args within about whole
// characters: all of them when they fit, else every argument by name
// (up to maxArgNames) with its value cut to perValue characters. cut
// reports that anything was left out.
func argsExcerpt(args []byte, whole, perValue int) (text string, cut bool) {
	if utf8.RuneCount(args) <= whole {
		return string(args), false
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return cutRunes(string(args), whole), true
	}
	var b strings.Builder
	b.WriteByte('{')
	for n := 0; dec.More(); n++ {
		tok, err := dec.Token()
		name, ok := tok.(string)
		var value json.RawMessage
		if err != nil || !ok || dec.Decode(&value) != nil {
			b.WriteString("…")
			break
		}
		if n == maxArgNames {
			rest := 1
			for ; dec.More(); rest++ {
				if _, err := dec.Token(); err != nil || dec.Decode(&value) != nil {
					break
				}
			}
			fmt.Fprintf(&b, ",… %d more arguments", rest)
			break
		}
		if n > 0 {
			b.WriteByte(',')
		}
		quoted, _ := json.Marshal(name)
		if utf8.RuneCount(quoted) > maxArgName {
			quoted = []byte(cutRunes(string(quoted), maxArgName))
		}
		b.Write(quoted)
		b.WriteByte(':')
		v := string(value)
		if utf8.RuneCountInString(v) > perValue {
			v = cutRunes(v, perValue)
		}
		b.WriteString(v)
	}
	b.WriteByte('}')
	return b.String(), true
}

// cutRunes keeps the first n runes of s and marks the cut.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// argsNote says, after a question whose arguments were cut, how much was
// left out and where the whole call is.
func argsNote(total int) string {
	where := "the approve link's page and the dashboard show the full call"
	if total > maxShownArgs {
		where = fmt.Sprintf("the approve link's page and the dashboard show every argument, values over %d characters cut", storedPerValue)
	}
	return fmt.Sprintf(" Arguments shortened here (%d bytes in all, every argument named, long values cut): %s before deciding.", total, where)
}
