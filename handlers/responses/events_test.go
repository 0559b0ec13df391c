package responses

import (
	"strings"
	"testing"
)

// TestEventsCutsWholeEvents: events split anywhere come out whole, once,
// their data lines joined; events without data and [DONE] are skipped;
// the tail counts only at the end.
func TestEventsCutsWholeEvents(t *testing.T) {
	stream := "event: a\ndata: {\"x\":1}\n\n: comment\n\ndata: line1\r\ndata:line2\n\ndata: [DONE]\n\ndata: tail"
	for cut := 0; cut <= len(stream); cut++ {
		var s Events
		var got []string
		for _, part := range []string{stream[:cut], stream[cut:]} {
			s.Add([]byte(part))
			for data, ok := s.Next(false); ok; data, ok = s.Next(false) {
				got = append(got, string(data))
			}
		}
		for data, ok := s.Next(true); ok; data, ok = s.Next(true) {
			got = append(got, string(data))
		}
		if want := `{"x":1}|line1` + "\n" + `line2|tail`; strings.Join(got, "|") != want {
			t.Fatalf("cut at %d: %q, want %q", cut, got, want)
		}
	}
}
