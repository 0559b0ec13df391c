package secretscan

import (
	"errors"
	"strconv"
	"strings"
)

// Location is where in a request body a secret was: never the value.
type Location struct {
	// Path is the JSON path of the string, e.g. messages[3].content[0].content.
	Path string
	// Message is the index in the body's top-level list (messages, input,
	// contents, system), or -1.
	Message int
	// ToolCallID is the tool call the text belongs to (tool_use_id,
	// tool_call_id, call_id, toolUseId, or the id of the block or item
	// holding it), or "".
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

// ScanBody finds the secrets in every string value of a JSON body.
func (rs *Rules) ScanBody(body []byte) ([]Detection, error) {
	w := walker{rs: rs, src: body, s: rs.getScratch()}
	defer rs.putScratch(w.s)
	if err := w.run(); err != nil {
		return nil, err
	}
	return w.dets, nil
}

// RedactBody returns body with every secret in its string values replaced
// by the namer's placeholder, and what it replaced. With nothing found it
// returns body itself and no detections.
func (rs *Rules) RedactBody(body []byte, names Namer) ([]byte, []Detection, error) {
	w := walker{rs: rs, src: body, s: rs.getScratch(), names: names}
	defer rs.putScratch(w.s)
	if err := w.run(); err != nil {
		return body, nil, err
	}
	if w.out == nil {
		return body, w.dets, nil
	}
	return append(w.out, body[w.copied:]...), w.dets, nil
}

type pathElem struct {
	key   string
	index int // -1 for an object member
}

type frame struct {
	firstDet int
	toolID   string
	idRank   int // how good toolID is: a specific key beats a bare "id"
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
	out    []byte // the rewritten body so far, nil until the first secret
	copied int    // src[:copied] is in out
	text   []byte // a decoded string
	// str, when set, is called for each text string instead of scanning
	// it (the stream redactor collects them).
	str func(path []pathElem, start, end int, escaped bool)
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

// notText are members whose string values an upstream reads as ids,
// names of formats or opaque tokens the gateway must hand back unchanged
// (a thinking signature altered is a refused request).
func notText(key string) bool {
	switch key {
	case "id", "tool_use_id", "tool_call_id", "call_id", "toolUseId", "previous_response_id",
		"response_id", "item_id", "file_id", "conversation", "model", "type", "role",
		"signature", "thoughtSignature", "thought_signature", "encrypted_content",
		"media_type", "mime_type", "mimeType", "format", "status", "stop_reason", "finish_reason":
		return true
	}
	return false
}

// toolIDRank ranks the members that name a tool call.
func toolIDRank(key string) int {
	switch key {
	case "tool_use_id", "tool_call_id", "call_id", "toolUseId":
		return 2
	case "id":
		return 1
	}
	return 0
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
		end, escaped, err := w.stringEnd()
		if err != nil {
			return err
		}
		w.pos = end
		if rank := toolIDRank(key); rank > 0 && len(w.frames) > 0 {
			if f := &w.frames[len(w.frames)-1]; rank > f.idRank {
				f.toolID, f.idRank = w.decodedString(start, end, escaped), rank
			}
		}
		if notText(key) {
			return nil
		}
		if w.str != nil {
			w.str(w.path, start, end, escaped)
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
	w.pos++ // {
	w.frames = append(w.frames, frame{firstDet: len(w.dets)})
	defer w.closeFrame()
	w.ws()
	if w.pos < len(w.src) && w.src[w.pos] == '}' {
		w.pos++
		return nil
	}
	for {
		w.ws()
		if w.pos >= len(w.src) || w.src[w.pos] != '"' {
			return errSyntax
		}
		start := w.pos
		end, escaped, err := w.stringEnd()
		if err != nil {
			return err
		}
		key := w.keyString(start, end, escaped)
		w.pos = end
		w.ws()
		if w.pos >= len(w.src) || w.src[w.pos] != ':' {
			return errSyntax
		}
		w.pos++
		if done, err := w.member(pathElem{key: key, index: -1}, '}'); done || err != nil {
			return err
		}
	}
}

// closeFrame ends an object: the tool call id it named goes to the
// detections inside it that have none.
func (w *walker) closeFrame() {
	f := w.frames[len(w.frames)-1]
	w.frames = w.frames[:len(w.frames)-1]
	if f.toolID == "" {
		return
	}
	for i := f.firstDet; i < len(w.dets); i++ {
		if w.dets[i].Location.ToolCallID == "" {
			w.dets[i].Location.ToolCallID = f.toolID
		}
	}
}

func (w *walker) array() error {
	w.pos++ // [
	w.ws()
	if w.pos < len(w.src) && w.src[w.pos] == ']' {
		w.pos++
		return nil
	}
	for i := 0; ; i++ {
		if done, err := w.member(pathElem{index: i}, ']'); done || err != nil {
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

// stringEnd returns the offset just past the string starting at w.pos
// and whether it holds an escape.
func (w *walker) stringEnd() (int, bool, error) {
	escaped := false
	for i := w.pos + 1; i < len(w.src); i++ {
		switch c := w.src[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			i++
		case c < 0x20:
			return 0, false, errSyntax
		}
	}
	return 0, false, errSyntax
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
	return string(appendUnescaped(nil, raw))
}

func (w *walker) scanString(start, end int, escaped bool) error {
	raw := w.src[start+1 : end-1]
	if len(raw) < minSecret {
		return nil
	}
	var text string
	if escaped {
		w.text = appendUnescaped(w.text[:0], raw)
		text = unsafeString(w.text)
	} else {
		text = unsafeString(raw)
	}
	hits := w.rs.scan(text, w.s)
	if len(hits) == 0 {
		return nil
	}
	loc := w.location()
	var rewritten []byte
	if w.names != nil {
		if w.out == nil {
			w.out = make([]byte, 0, len(w.src)+64)
		}
		w.out = append(w.out, w.src[w.copied:start]...)
		rewritten = append(w.out, '"')
	}
	last := 0
	for _, h := range hits {
		d := Detection{Rule: h.Rule, Location: loc}
		if w.names != nil {
			d.Placeholder = w.names.Placeholder(h.Rule, text[h.Start:h.End])
			rewritten = appendEscaped(rewritten, text[last:h.Start])
			rewritten = appendEscaped(rewritten, d.Placeholder)
			last = h.End
		}
		w.dets = append(w.dets, d)
	}
	if w.names != nil {
		rewritten = appendEscaped(rewritten, text[last:])
		w.out = append(rewritten, '"')
		w.copied = end
	}
	return nil
}

func (w *walker) location() Location {
	var b strings.Builder
	loc := Location{Message: -1}
	for i, p := range w.path {
		if p.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.index))
			b.WriteByte(']')
			if i == 1 {
				loc.Message = p.index
			}
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.key)
	}
	loc.Path = b.String()
	if loc.Path == "" {
		loc.Path = "$"
	}
	return loc
}
