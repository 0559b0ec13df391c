package secretscan

import (
	"strings"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// TestCleanTextsAreScannedOnce: a long text with no secret is remembered
// and not scanned again; the same text with a secret put in, or any text
// with a hit, is scanned and found every time; a text shorter than any
// secret is never remembered.
func TestCleanTextsAreScannedOnce(t *testing.T) {
	rs, err := Compile()
	if err != nil {
		t.Fatal(err)
	}
	s := rs.newScratch()
	prose := strings.Repeat("Keep answers under two hundred words unless asked for more. ", 12)
	if hits := rs.scan(prose, s); len(hits) != 0 || !rs.clean.has(prose) {
		t.Fatalf("clean prose: hits %v, remembered %v", hits, rs.clean.has(prose))
	}
	// A view of a buffer that changes after the scan: the memory kept a
	// copy, and the changed text is no longer equal to it.
	buf := []byte(prose)
	view := unsafeString(buf)
	if hits := rs.scan(view, s); len(hits) != 0 {
		t.Fatal(hits)
	}
	tried := 0
	for _, c := range secrettest.Corpus(5) {
		if len(c.Text) > len(prose)-200 {
			continue
		}
		tried++
		// The buffer the remembered view was made of now holds a secret.
		copy(buf[100:], c.Text)
		for range 2 {
			if hits := rs.scan(view, s); len(hits) == 0 {
				t.Fatalf("%s: not found in a text that differs from a remembered one", c.Kind)
			}
		}
		if rs.clean.has(view) {
			t.Fatalf("%s: a text with a hit was remembered", c.Kind)
		}
		copy(buf, prose)
	}
	if tried < 10 {
		t.Fatalf("only %d credentials tried", tried)
	}
	if !rs.clean.has(prose) {
		t.Fatal("the clean prose was forgotten")
	}
	// A text shorter than any secret is not looked at, nor remembered; a
	// short member name is, as it comes back with every body.
	tiny := "role"
	rs.scan(tiny, s)
	if rs.clean.has(tiny) {
		t.Fatal("a text shorter than any secret was remembered")
	}
	name := "prompt_tokens"
	if hits := rs.scan(name, s); len(hits) != 0 || !rs.clean.has(name) {
		t.Fatalf("member name: hits %v, remembered %v", hits, rs.clean.has(name))
	}
}

// TestCleanTextsStayWithinTheirBudget: remembering more than the budget
// forgets the oldest texts, and what is kept never exceeds it.
func TestCleanTextsStayWithinTheirBudget(t *testing.T) {
	c := newCleanTexts()
	text := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), 4096) + strings.Repeat("x", i) }
	n := 3 * cleanBudget / 4096
	for i := range n {
		c.add(text(i))
	}
	total := 0
	for i := range c.shards {
		sh := &c.shards[i]
		for _, m := range []map[uint64]string{sh.cur, sh.prev} {
			for _, s := range m {
				total += len(s)
			}
		}
	}
	if total > cleanBudget {
		t.Fatalf("%d bytes kept, budget %d", total, cleanBudget)
	}
	if !c.has(text(n-1)) || c.has(text(0)) {
		t.Fatalf("newest kept %v, oldest kept %v; want the newest only", c.has(text(n-1)), c.has(text(0)))
	}
}
