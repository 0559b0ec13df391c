package secretscan

import (
	"hash/maphash"
	"strings"
	"sync"
)

// A coding agent sends its whole history with every turn: the system
// prompt, the tool results and the answers of earlier turns come back
// unchanged, and the firewall scanned each again on every request (the
// bench's 850-byte system prompt alone was most of a request's scan).
// Rules remember the texts in which they found nothing, and a text
// equal to one of them is not scanned again. The scan is a function of
// the text alone (the rules do not change for the life of a Rules, and
// the scratch only holds buffers), so a remembered text gives what its
// scan would: nothing. Equality is checked on the whole text, never on
// its hash alone, so no collision can hide a secret; texts with a hit are
// never remembered.

// Bounds of the clean-text memory: every text the rules look at
// (cleanMinText is minSecret) is worth remembering, a short one too: a
// member name of 8 to 15 bytes cost 130–350 ns to scan ("prompt_tokens"
// holds a rule's keyword, so a regular expression runs) against about
// 30 ns to hash and compare, and a JSON body repeats the same names on
// every request; cleanBudget bounds the
// bytes kept, each text counted with cleanEntryCost for its entry (two
// generations of at most half of it each), and no one text takes more
// than an eighth of it.
const (
	cleanMinText   = minSecret
	cleanBudget    = 8 << 20
	cleanEntryCost = 64
	cleanShards    = 16
	// cleanStreamMinText is the bound for a stream's whole strings.
	cleanStreamMinText = 512
)

// cleanTexts is the memory of texts in which the rules found nothing.
type cleanTexts struct {
	seed   maphash.Seed
	shards [cleanShards]cleanShard
}

// cleanShard keeps two generations: texts are added to cur, and once cur
// holds its share of the budget it becomes prev, whose texts are dropped
// unless seen again before the next turn (then moved to cur). So the
// memory keeps what was seen recently, within the budget, without a list
// to maintain on every hit.
type cleanShard struct {
	mu        sync.Mutex
	cur, prev map[uint64]string
	curBytes  int
}

func newCleanTexts() *cleanTexts {
	return &cleanTexts{seed: maphash.MakeSeed()}
}

// cacheable says whether text is worth remembering.
func cacheable(text string) bool {
	return len(text) >= cleanMinText && len(text) <= cleanBudget/8
}

// has reports whether text is remembered as clean.
func (c *cleanTexts) has(text string) bool {
	h := maphash.String(c.seed, text)
	sh := &c.shards[h%cleanShards]
	sh.mu.Lock()
	kept, ok := sh.cur[h]
	if !ok {
		if kept, ok = sh.prev[h]; ok && kept == text {
			delete(sh.prev, h)
			sh.addLocked(h, kept)
		}
	}
	sh.mu.Unlock()
	// Strings do not change: the comparison needs no lock.
	return ok && kept == text
}

// add remembers text (which may be a view of a buffer: it is copied) as
// clean.
func (c *cleanTexts) add(text string) {
	h := maphash.String(c.seed, text)
	kept := strings.Clone(text)
	sh := &c.shards[h%cleanShards]
	sh.mu.Lock()
	sh.addLocked(h, kept)
	sh.mu.Unlock()
}

func (sh *cleanShard) addLocked(h uint64, text string) {
	if old, ok := sh.cur[h]; ok {
		sh.curBytes -= len(old) + cleanEntryCost
	}
	if sh.cur == nil || sh.curBytes+len(text)+cleanEntryCost > cleanBudget/2/cleanShards {
		sh.prev, sh.cur, sh.curBytes = sh.cur, make(map[uint64]string), 0
	}
	sh.cur[h] = text
	sh.curBytes += len(text) + cleanEntryCost
}
