package responses

import "bytes"

// Events cuts a server-sent event stream, written in pieces of any size,
// into its events' data: what a sink that keeps or forwards events
// rather than bytes (a background run's, a WebSocket turn's) needs. The
// zero value is ready.
type Events struct {
	pending []byte // bytes not yet a whole event
}

// Add appends the stream's next bytes.
func (s *Events) Add(p []byte) { s.pending = append(s.pending, p...) }

// Next returns the data of the next whole event that has any ("[DONE]"
// has none), its lines joined by newlines; ok is false when no whole
// event is left. With final the stream has ended, and what is left after
// the last blank line counts as an event. data is valid until the next
// Add.
func (s *Events) Next(final bool) (data []byte, ok bool) {
	for {
		i := bytes.Index(s.pending, []byte("\n\n"))
		var ev []byte
		if i < 0 {
			if !final || len(bytes.TrimSpace(s.pending)) == 0 {
				return nil, false
			}
			ev, s.pending = s.pending, nil
		} else {
			ev, s.pending = s.pending[:i], s.pending[i+2:]
		}
		if data = eventData(ev); len(data) > 0 {
			return data, true
		}
	}
}

// eventData is the data of one SSE event.
func eventData(ev []byte) []byte {
	var data []byte
	for _, line := range bytes.Split(ev, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	if bytes.Equal(data, []byte("[DONE]")) {
		return nil
	}
	return data
}
