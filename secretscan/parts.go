package secretscan

// A message's text may come in several parts (content blocks, Gemini
// parts, Converse content): a client can split a secret over two of
// them, and each part alone holds no whole secret. The walker scans the
// text where adjacent parts of one list meet: the last joinSpan bytes of
// the parts before and the first joinSpan bytes of the next one. A secret
// found across the seam is redacted in every part it touches.

// joinSpan bounds the text kept on either side of a seam.
const joinSpan = maxCarry

// partWindow is the text of a list's latest adjacent text parts.
type partWindow struct {
	next int    // the index an adjacent part has
	buf  []byte // the parts' last joinSpan bytes, concatenated
	segs []partSeg
}

// partSeg is the piece of one part's text in a window's buf.
type partSeg struct {
	at, end int // the part's string in the body, quotes included
	escaped bool
	textOff int // where the piece starts in the part's decoded text
	bufOff  int // where it starts in buf
	n       int
}

// startParts starts the window of a list at array depth d.
func (s *scratch) startParts(d int) {
	for len(s.parts) <= d {
		s.parts = append(s.parts, partWindow{})
	}
	p := &s.parts[d]
	p.next, p.buf, p.segs = -1, p.buf[:0], p.segs[:0]
}

// textPart says whether the string being walked is a text part: the
// "text" member of an object that is an element of a list.
func (w *walker) textPart() bool {
	n := len(w.path)
	return w.str == nil && n >= 2 && w.path[n-1].index < 0 && w.path[n-1].key == "text" && w.path[n-2].index >= 0 && w.arrays > 0
}

// joinPart scans the seam between the list's previous adjacent text parts
// and this one (text, the string at src[start:end]), then adds text to the
// window.
func (w *walker) joinPart(start, end int, escaped bool, text string) {
	p := &w.s.parts[w.arrays]
	i := w.path[len(w.path)-2].index
	if p.next != i {
		p.buf, p.segs = p.buf[:0], p.segs[:0]
	}
	p.next = i + 1
	if n := len(p.buf); n > 0 && len(text) > 0 {
		w.s.join = append(append(w.s.join[:0], p.buf...), text[:min(len(text), joinSpan)]...)
		join := unsafeString(w.s.join)
		for _, h := range w.rs.scan(join, w.s) {
			if h.Start >= n || h.End <= n {
				continue // the whole secret is in one part: found there
			}
			d := Detection{Rule: h.Rule, Location: w.location()}
			if w.names != nil {
				d.Placeholder = w.names.Placeholder(h.Rule, join[h.Start:h.End])
				placeholder := d.Placeholder
				for _, sg := range p.segs {
					lo, hi := max(h.Start, sg.bufOff), min(n, sg.bufOff+sg.n)
					if lo >= hi {
						continue
					}
					w.mark(sg.at, sg.end, sg.escaped, sg.textOff+lo-sg.bufOff, sg.textOff+hi-sg.bufOff, placeholder)
					placeholder = ""
				}
				w.mark(start, end, escaped, 0, h.End-n, placeholder)
			}
			w.dets = append(w.dets, d)
		}
	}
	if len(text) >= joinSpan {
		p.buf = append(p.buf[:0], text[len(text)-joinSpan:]...)
		p.segs = append(p.segs[:0], partSeg{at: start, end: end, escaped: escaped, textOff: len(text) - joinSpan, n: joinSpan})
		return
	}
	p.segs = append(p.segs, partSeg{at: start, end: end, escaped: escaped, bufOff: len(p.buf), n: len(text)})
	p.buf = append(p.buf, text...)
	drop := len(p.buf) - joinSpan
	if drop <= 0 {
		return
	}
	p.buf = append(p.buf[:0], p.buf[drop:]...)
	keep := p.segs[:0]
	for _, sg := range p.segs {
		if sg.bufOff+sg.n <= drop {
			continue
		}
		if sg.bufOff < drop {
			cut := drop - sg.bufOff
			sg.textOff, sg.n, sg.bufOff = sg.textOff+cut, sg.n-cut, 0
		} else {
			sg.bufOff -= drop
		}
		keep = append(keep, sg)
	}
	p.segs = keep
}
