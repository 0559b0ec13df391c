package secretscan

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// Location is where in a request body a secret was: never the value.
type Location struct {
	// Path is the JSON path of the string, e.g. messages[3].content[0].content.
	// It names only indices and the members the wire formats define; any
	// other member (a tool argument, a metadata key) is <member N>, its
	// position in its object, so that no path carries a client's text.
	Path string
	// Message is the index in the body's top-level list (messages, input,
	// contents, system), or -1.
	Message int
	// ToolCallID is the tool call the text belongs to (tool_use_id,
	// tool_call_id, call_id, toolUseId, or the id of the block or item
	// holding it), or "": only a short plain id that is not itself a
	// secret is kept.
	ToolCallID string
}

// String says where, for an error message or a log line.
func (l Location) String() string {
	if l.ToolCallID != "" {
		return l.Path + " (tool call " + l.ToolCallID + ")"
	}
	return l.Path
}

// Detection is one secret found in a body.
type Detection struct {
	Rule     string
	Location Location
	// Placeholder is what replaced the value, when the body was redacted.
	Placeholder string
}

// Namer names a secret's placeholder; the same value must get the same
// name for as long as the namer lives (a session's Names).
type Namer interface {
	Placeholder(rule, value string) string
}

// errSyntax is a body that is not JSON: the caller's parser has already
// refused it, so this only guards against a caller that did not parse.
var errSyntax = errors.New("secretscan: body is not valid JSON")

// ScanBody finds the secrets in every string value and member name of a
// JSON body.
func (rs *Rules) ScanBody(body []byte) ([]Detection, error) {
	return rs.scanBody(body, "")
}

// scanBody is ScanBody; a non-empty only limits the scan to that member
// of the top-level object.
func (rs *Rules) scanBody(body []byte, only string) ([]Detection, error) {
	w := newWalker(rs, body, nil)
	w.only = only
	defer w.done()
	if err := w.run(); err != nil {
		return nil, err
	}
	return w.dets, nil
}

// RedactBody returns body with every secret in its string values and
// member names replaced by the namer's placeholder, and what it replaced.
// With nothing found it returns body itself and no detections.
func (rs *Rules) RedactBody(body []byte, names Namer) ([]byte, []Detection, error) {
	return rs.redactBody(body, names, "")
}

// redactBody is RedactBody; a non-empty only limits it to that member of
// the top-level object.
func (rs *Rules) redactBody(body []byte, names Namer, only string) ([]byte, []Detection, error) {
	w := newWalker(rs, body, names)
	w.only = only
	defer w.done()
	if err := w.run(); err != nil {
		return body, nil, err
	}
	if len(w.edits) == 0 {
		return body, w.dets, nil
	}
	return w.rewrite(), w.dets, nil
}

// stringCollector takes the strings of a walk (the stream redactor).
type stringCollector interface {
	collect(path []pathElem, start, end int, escaped bool)
}

type pathElem struct {
	key    string
	index  int  // -1 for an object member
	member int  // an object member's position in its object
	free   bool // the value is free-form data: ids and names in it are text
}

type frame struct {
	firstDet int
	// The member that names the object's tool call, as a span of src
	// (decoded only when a detection needs it).
	idStart, idEnd int
	idEscaped      bool
	idRank         int      // how good the id is: a specific key beats a bare "id"
	start          int      // the object's '{' in src
	names          []string // the object's member names, read when one is renamed
	renamed        []string // the names renamed members were given
}

type walker struct {
	rs     *Rules
	src    []byte
	pos    int
	s      *scratch
	names  Namer // nil: only scan
	path   []pathElem
	frames []frame
	dets   []Detection
	edits  []edit // the strings to rewrite, nil until the first secret
	marks  []mark // the secrets in them
	text   []byte // a decoded string
	arrays int    // how many arrays the walk is in
	// str, when set, is given each text string instead of it being
	// scanned (the stream redactor collects them).
	str stringCollector
	// only, when set, is the one member of the top-level object walked;
	// the others are skipped unread.
	only string
}

// edit is a string of src (quotes included) that the redacted body
// rewrites: a value, with its marks replaced, or a member's new name.
type edit struct {
	start, end int
	escaped    bool
	isName     bool
	name       string
}

// mark is a secret's bytes in the decoded text of the string at src
// offset at; placeholder replaces them ("" for the later pieces of a
// secret split over several strings: one placeholder stands for it).
type mark struct {
	at          int
	start, end  int
	placeholder string
}

// newWalker walks body with a pooled scratch, whose path and frames it
// reuses.
func newWalker(rs *Rules, body []byte, names Namer) walker {
	s := rs.getScratch()
	return walker{rs: rs, src: body, s: s, names: names, path: s.path[:0], frames: s.frames[:0]}
}

// done gives the scratch back, with the path and frames grown, cleared of
// the body's names.
func (w *walker) done() {
	clear(w.frames[:cap(w.frames)])
	clear(w.path[:cap(w.path)])
	w.s.path, w.s.frames = w.path[:0], w.frames[:0]
	w.rs.putScratch(w.s)
}

func (w *walker) run() error {
	if err := w.value(""); err != nil {
		return err
	}
	w.ws()
	if w.pos != len(w.src) {
		return errSyntax
	}
	return nil
}

func (w *walker) ws() {
	for w.pos < len(w.src) {
		switch w.src[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// free says whether the value being walked is free-form data.
func (w *walker) free() bool {
	return len(w.path) > 0 && w.path[len(w.path)-1].free
}

func (w *walker) value(key string) error {
	w.ws()
	if w.pos >= len(w.src) {
		return errSyntax
	}
	switch c := w.src[w.pos]; c {
	case '{':
		return w.object()
	case '[':
		return w.array()
	case '"':
		start := w.pos
		end, escaped, err := stringEnd(w.src, w.pos)
		if err != nil {
			return err
		}
		w.pos = end
		if !w.free() {
			if rank := toolIDRank(key); rank > 0 && len(w.frames) > 0 {
				if f := &w.frames[len(w.frames)-1]; rank > f.idRank {
					f.idStart, f.idEnd, f.idEscaped, f.idRank = start, end, escaped, rank
				}
			}
			if notText(key) {
				return nil
			}
		}
		if w.str != nil {
			w.str.collect(w.path, start, end, escaped)
			return nil
		}
		return w.scanString(start, end, escaped)
	default:
		for w.pos < len(w.src) {
			switch w.src[w.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			w.pos++
		}
		return nil
	}
}

func (w *walker) object() error {
	w.frames = append(w.frames, frame{firstDet: len(w.dets), start: w.pos})
	w.pos++ // {
	defer w.closeFrame()
	parentFree, top := w.free(), len(w.path) == 0
	w.ws()
	if w.pos < len(w.src) && w.src[w.pos] == '}' {
		w.pos++
		return nil
	}
	for m := 0; ; m++ {
		w.ws()
		if w.pos >= len(w.src) || w.src[w.pos] != '"' {
			return errSyntax
		}
		start := w.pos
		end, escaped, err := stringEnd(w.src, w.pos)
		if err != nil {
			return err
		}
		key := w.keyString(start, end, escaped)
		w.pos = end
		kind := kindOf(key, top)
		elem := pathElem{key: key, index: -1, member: m, free: parentFree || kind != protocolMember}
		if kind == unknownMember {
			w.scanName(elem, start, end, escaped)
		}
		w.ws()
		if w.pos >= len(w.src) || w.src[w.pos] != ':' {
			return errSyntax
		}
		w.pos++
		if top && w.only != "" && key != w.only {
			if done, err := w.skipMember(); done || err != nil {
				return err
			}
			continue
		}
		if done, err := w.member(elem, '}'); done || err != nil {
			return err
		}
	}
}

// skipMember passes over a member's value unread and the comma or brace
// after it; done is true after the brace.
func (w *walker) skipMember() (bool, error) {
	w.ws()
	end, err := jsonfast.SkipValue(w.src, w.pos)
	if err != nil {
		return false, errSyntax
	}
	w.pos = end
	return w.valueEnd('}')
}

// closeFrame ends an object: the tool call id it named goes to the
// detections inside it that have none, when it may be shown.
func (w *walker) closeFrame() {
	f := w.frames[len(w.frames)-1]
	w.frames = w.frames[:len(w.frames)-1]
	if f.idRank == 0 || f.idEnd-f.idStart == 2 || f.firstDet == len(w.dets) {
		return
	}
	toolID := w.decodedString(f.idStart, f.idEnd, f.idEscaped)
	if !w.rs.printableToolID(toolID, w.s) {
		return
	}
	for i := f.firstDet; i < len(w.dets); i++ {
		if w.dets[i].Location.ToolCallID == "" {
			w.dets[i].Location.ToolCallID = toolID
		}
	}
}

func (w *walker) array() error {
	w.pos++ // [
	w.arrays++
	defer func() { w.arrays-- }()
	if w.str == nil {
		w.s.startParts(w.arrays)
	}
	w.ws()
	if w.pos < len(w.src) && w.src[w.pos] == ']' {
		w.pos++
		return nil
	}
	for i := 0; ; i++ {
		if done, err := w.member(pathElem{index: i, free: w.free()}, ']'); done || err != nil {
			return err
		}
	}
}

// member walks one value of an object or array at elem and the comma or
// closing bracket after it; done is true after the closing one.
func (w *walker) member(elem pathElem, closing byte) (bool, error) {
	w.path = append(w.path, elem)
	if err := w.value(elem.key); err != nil {
		return false, err
	}
	w.path = w.path[:len(w.path)-1]
	return w.valueEnd(closing)
}

// valueEnd passes the comma or closing bracket after a value; done is
// true after the closing one.
func (w *walker) valueEnd(closing byte) (done bool, err error) {
	w.ws()
	if w.pos >= len(w.src) {
		return false, errSyntax
	}
	switch w.src[w.pos] {
	case ',':
		w.pos++
		return false, nil
	case closing:
		w.pos++
		return true, nil
	}
	return false, errSyntax
}

// stringEnd returns the offset just past the string starting at pos and
// whether it holds an escape. Strings (a prompt, a file's text) are most
// of a body, so it passes over eight bytes at a time while none of them
// is a quote, a backslash or a control character.
func stringEnd(src []byte, pos int) (int, bool, error) {
	escaped := false
	for i := pos + 1; ; {
		for i+8 <= len(src) && !special8(binary.LittleEndian.Uint64(src[i:])) {
			i += 8
		}
		if i >= len(src) {
			return 0, false, errSyntax
		}
		switch c := src[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			i++
		case c < 0x20:
			return 0, false, errSyntax
		}
		i++
	}
}

// special8 reports whether one of the eight bytes of x is a quote, a
// backslash or below 0x20 (the bit tricks of "Bit Twiddling Hacks":
// exact for whether any byte matches, which is all that is asked).
func special8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (x - ones*0x20) &^ x
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	return (below|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0
}

// keyString is a member's name, valid while the walk lasts (paths are
// copied out by location): no allocation for a name without escapes.
func (w *walker) keyString(start, end int, escaped bool) string {
	if !escaped {
		return unsafeString(w.src[start+1 : end-1])
	}
	return w.decodedString(start, end, escaped)
}

// decodedString is the string at src[start:end] (quotes included) as Go
// text; it allocates, so it is kept for keys and ids.
func (w *walker) decodedString(start, end int, escaped bool) string {
	raw := w.src[start+1 : end-1]
	if !escaped {
		return string(raw)
	}
	return string(jsonfast.AppendUnescaped(nil, raw))
}

// textOf views the string at src[start:end] as text, valid until the next
// call.
func (w *walker) textOf(start, end int, escaped bool) string {
	raw := w.src[start+1 : end-1]
	if !escaped {
		return unsafeString(raw)
	}
	w.text = jsonfast.AppendUnescaped(w.text[:0], raw)
	return unsafeString(w.text)
}

func (w *walker) scanString(start, end int, escaped bool) error {
	part := w.textPart()
	if end-start-2 < minSecret && !part {
		return nil
	}
	text := w.textOf(start, end, escaped)
	hits := w.rs.scan(text, w.s)
	var first [][2]int
	if len(hits) > 0 {
		loc := w.location()
		for _, h := range hits {
			d := Detection{Rule: h.Rule, Location: loc}
			if w.names != nil {
				d.Placeholder = w.names.Placeholder(h.Rule, text[h.Start:h.End])
				w.mark(start, end, escaped, h.Start, h.End, d.Placeholder)
			}
			w.dets = append(w.dets, d)
			first = append(first, [2]int{h.Start, h.End})
		}
	}
	if spans, values, rules := w.scanNested(text, first); len(spans) > 0 {
		loc := w.location()
		for i, sp := range spans {
			d := Detection{Rule: rules[i], Location: loc}
			if w.names != nil {
				d.Placeholder = w.names.Placeholder(rules[i], values[i])
				w.mark(start, end, escaped, sp[0], sp[1], d.Placeholder)
			}
			w.dets = append(w.dets, d)
		}
	}
	if part {
		w.joinPart(start, end, escaped, text)
	}
	return nil
}

// mark records a secret in the string at src[start:end].
func (w *walker) mark(start, end int, escaped bool, from, to int, placeholder string) {
	found := false
	for i := len(w.edits) - 1; i >= 0 && !found; i-- {
		found = w.edits[i].start == start && !w.edits[i].isName
	}
	if !found {
		w.edits = append(w.edits, edit{start: start, end: end, escaped: escaped})
	}
	w.marks = append(w.marks, mark{at: start, start: from, end: to, placeholder: placeholder})
}

// rewrite is the body with its edits applied.
func (w *walker) rewrite() []byte {
	slices.SortFunc(w.edits, func(a, b edit) int { return a.start - b.start })
	out := make([]byte, 0, len(w.src)+64)
	copied := 0
	var ms []mark
	for _, e := range w.edits {
		out = append(out, w.src[copied:e.start]...)
		out = append(out, '"')
		if e.isName {
			out = appendEscaped(out, e.name)
		} else {
			text := w.textOf(e.start, e.end, e.escaped)
			ms = ms[:0]
			for _, m := range w.marks {
				if m.at == e.start {
					ms = append(ms, m)
				}
			}
			out = appendMarked(out, text, ms)
		}
		out = append(out, '"')
		copied = e.end
	}
	return append(out, w.src[copied:]...)
}

// appendMarked writes text with its marks (overlapping ones as one)
// replaced by their placeholders.
func appendMarked(out []byte, text string, ms []mark) []byte {
	slices.SortFunc(ms, func(a, b mark) int { return a.start - b.start })
	last := 0
	for i := 0; i < len(ms); i++ {
		cur := ms[i]
		for i+1 < len(ms) && ms[i+1].start < cur.end {
			i++
			cur.end = max(cur.end, ms[i].end)
			if cur.placeholder == "" {
				cur.placeholder = ms[i].placeholder
			}
		}
		if cur.start < last {
			cur.start = last
		}
		out = appendEscaped(out, text[last:cur.start])
		out = appendEscaped(out, cur.placeholder)
		last = max(last, cur.end)
	}
	return appendEscaped(out, text[last:])
}

func (w *walker) location() Location {
	loc := Location{Message: -1}
	if len(w.path) > 1 && w.path[1].index >= 0 {
		loc.Message = w.path[1].index
	}
	path := appendLocation(nil, w.path)
	if len(path) > maxPath {
		// A path is ASCII: cut in its middle, a deep body's path stays
		// a log line.
		path = append(append(path[:maxPath/2-2:maxPath/2-2], "…"...), path[len(path)-maxPath/2+2:]...)
	}
	loc.Path = string(path)
	if loc.Path == "" {
		loc.Path = "$"
	}
	return loc
}

// maxPath bounds a location's path.
const maxPath = 256

// appendLocation writes path as a detection shows it: indices and the
// formats' own member names; any other member is <member N>.
func appendLocation(dst []byte, path []pathElem) []byte {
	for i, p := range path {
		if p.index >= 0 {
			dst = append(dst, '[')
			dst = strconv.AppendInt(dst, int64(p.index), 10)
			dst = append(dst, ']')
			continue
		}
		if i > 0 {
			dst = append(dst, '.')
		}
		if knownMember(p.key) {
			dst = append(dst, p.key...)
			continue
		}
		dst = append(dst, "<member "...)
		dst = strconv.AppendInt(dst, int64(p.member), 10)
		dst = append(dst, '>')
	}
	return dst
}
