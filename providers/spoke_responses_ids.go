package providers

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// assignIDs gives each input item without one an id, in order, and
// writes it into the item (the stored input and a native upstream see
// it); NewItems is the turn's items with their ids. All the ids share one
// string and all the rewritten items one buffer: a long conversation
// sent whole every turn (Codex's) costs two allocations, not two an item.
func (t *ResponsesTurn) assignIDs() {
	t.NewItems = make([]json.RawMessage, len(t.Items))
	needs := func(i int) bool { return t.items[i].ID == "" && !t.items[i].isReference() }
	// An id is at most 44 bytes (a prefix of 5 bytes at most, the 26-byte nonce, 13
	// base-36 digits); a short conversation's are written on the stack.
	count := 0
	for i := range t.items {
		if needs(i) {
			count++
		}
	}
	var stack [4 * 45]byte
	ids := stack[:0]
	if count > len(stack)/45 {
		ids = make([]byte, 0, count*45)
	}
	size, seq := 0, t.seq
	for i := range t.items {
		if needs(i) {
			if t.nonce == "" {
				t.nonce = lowerNonce()
			}
			seq++
			n := len(ids)
			ids = appendItemID(ids, t.items[i].Type, t.nonce, seq)
			size += len(t.Items[i]) + len(ids) - n + 10
		}
	}
	all := string(ids)
	buf := make([]byte, 0, size)
	for i, raw := range t.Items {
		if needs(i) {
			t.seq++
			// The id's length, from the same writer (on the stack).
			var one [45]byte
			n := len(appendItemID(one[:0], t.items[i].Type, t.nonce, t.seq))
			t.items[i].ID, all = all[:n], all[n:]
			start := len(buf)
			buf = appendWithID(buf, raw, t.items[i].ID)
			raw = buf[start:len(buf):len(buf)]
			t.Items[i] = raw
		}
		t.NewItems[i] = raw
	}
}

// appendItemID appends the id of the seq-th item of type typ in a turn
// whose random part is nonce: the one writer of the ids newID and
// assignIDs mint.
func appendItemID(dst []byte, typ, nonce string, seq uint64) []byte {
	return strconv.AppendUint(append(append(dst, itemPrefix(typ)...), nonce...), seq, 36)
}

// appendWithID appends raw, an item object without "id", with id as its
// first member.
func appendWithID(dst []byte, raw json.RawMessage, id string) []byte {
	raw = bytes.TrimSpace(raw)
	dst = append(dst, `{"id":`...)
	dst = jsonfast.AppendQuoted(dst, id, false)
	rest := bytes.TrimSpace(raw[1:])
	if len(rest) > 0 && rest[0] != '}' {
		dst = append(dst, ',')
	}
	return append(dst, rest...)
}
