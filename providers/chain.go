package providers

import "bytes"

// Chain composes two stream translators: first turns upstream events into
// an intermediate SSE format, second turns that into the client's. It is
// how Ollama streams reach Anthropic clients, through OpenAI chunks,
// without a third hand-written translator.
func Chain(first, second StreamTranslator) StreamTranslator {
	c := &chain{first: first, second: second}
	if f, ok := second.(StreamFailer); ok {
		return &failingChain{chain: c, f: f}
	}
	return c
}

// failingChain is a chain whose client-facing translator ends a broken
// stream itself (Responses: error, then response.failed).
type failingChain struct {
	*chain
	f StreamFailer
}

func (c *failingChain) Fail(dst []byte, e *APIError) []byte { return c.f.Fail(dst, e) }

type chain struct {
	first, second StreamTranslator
	mid           []byte
}

func (c *chain) Translate(dst []byte, ev Event) ([]byte, error) {
	var err error
	c.mid, err = c.first.Translate(c.mid[:0], ev)
	if err != nil {
		return dst, err
	}
	return c.feed(dst, c.mid)
}

func (c *chain) Finish(dst []byte) []byte {
	c.mid = c.first.Finish(c.mid[:0])
	dst, err := c.feed(dst, c.mid)
	if err != nil {
		return dst
	}
	return c.second.Finish(dst)
}

// Usage is the upstream-facing translator's: it read the real counters.
func (c *chain) Usage() Usage { return c.first.Usage() }

// Complete is the upstream-facing translator's: it saw the upstream's ending.
func (c *chain) Complete() bool { return c.first.Complete() }

// feed splits SSE text produced by first into events for second.
func (c *chain) feed(dst, sse []byte) ([]byte, error) {
	for len(sse) > 0 {
		end := bytes.Index(sse, []byte("\n\n"))
		var block []byte
		if end < 0 {
			block, sse = sse, nil
		} else {
			block, sse = sse[:end], sse[end+2:]
		}
		var ev Event
		for len(block) > 0 {
			line := block
			if i := bytes.IndexByte(block, '\n'); i >= 0 {
				line, block = block[:i], block[i+1:]
			} else {
				block = nil
			}
			switch {
			case bytes.HasPrefix(line, []byte("event: ")):
				ev.Name = line[len("event: "):]
			case bytes.HasPrefix(line, []byte("data: ")):
				ev.Data = line[len("data: "):]
			}
		}
		if ev.Data == nil {
			continue
		}
		var err error
		if dst, err = c.second.Translate(dst, ev); err != nil {
			return dst, err
		}
	}
	return dst, nil
}
