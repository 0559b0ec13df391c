// Package tokencount answers Anthropic-shaped count_tokens requests without
// inference: with OpenAI's BPE vocabularies embedded in the binary, or with
// the tokenize endpoint of a local vLLM or llama.cpp server.
//
// Claude models are not counted here: Anthropic's tokenizer is not public,
// so their counts come from Anthropic's own free count_tokens endpoint.
package tokencount

import (
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// encoding indexes the vocabularies a Counter can load.
type encoding int

const (
	o200kBase encoding = iota
	cl100kBase
	p50kBase
	p50kEdit
	r50kBase
	numEncodings
)

// String is tiktoken's name for the encoding, as returned by CountOpenAI.
func (e encoding) String() string {
	switch e {
	case cl100kBase:
		return "cl100k_base"
	case p50kBase:
		return "p50k_base"
	case p50kEdit:
		return "p50k_edit"
	case r50kBase:
		return "r50k_base"
	}
	return "o200k_base"
}

// newCodec builds a codec; its first call per vocabulary also builds the
// vocabulary map (tens of milliseconds, megabytes of heap), hence the lazy
// load.
func (e encoding) newCodec() *codec.Codec {
	switch e {
	case cl100kBase:
		return codec.NewCl100kBase()
	case p50kBase:
		return codec.NewP50kBase()
	case p50kEdit:
		return codec.NewP50kEdit()
	case r50kBase:
		return codec.NewR50kBase()
	}
	return codec.NewO200kBase()
}

// Counter counts the input tokens of Anthropic-shaped count_tokens request
// bodies. It is safe for concurrent use; each vocabulary is loaded on first
// use and then kept. The zero value is not usable: call New.
type Counter struct {
	codecs [numEncodings]lazyCodec
}

type lazyCodec struct {
	once sync.Once
	c    *codec.Codec
}

// New returns a Counter that has loaded no vocabulary yet.
func New() *Counter {
	return &Counter{}
}

func (c *Counter) codec(e encoding) *codec.Codec {
	l := &c.codecs[e]
	l.once.Do(func() { l.c = e.newCodec() })
	return l.c
}

// encodingFor maps an OpenAI model name (without provider prefix) to its
// tiktoken encoding, following tiktoken's model.py: exact names first, then
// prefixes. Longer, more specific prefixes come first so that "gpt-4o" does
// not fall into "gpt-4". Unknown names get o200k_base, the encoding of every
// OpenAI chat model since gpt-4o, since a new model is far likelier than an
// old one. gpt-oss uses o200k_harmony, which is o200k_base plus special
// tokens that never occur in counted text; gpt2 shares r50k_base's ranks.
func encodingFor(model string) encoding {
	m := strings.ToLower(strings.TrimSpace(model))
	switch m {
	case "gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "text-embedding-ada-002",
		"text-embedding-3-small", "text-embedding-3-large", "davinci-002", "babbage-002":
		return cl100kBase
	case "text-davinci-003", "text-davinci-002":
		return p50kBase
	case "text-davinci-edit-001", "code-davinci-edit-001":
		return p50kEdit
	case "davinci", "curie", "babbage", "ada", "gpt2", "gpt-2":
		return r50kBase
	}
	for _, p := range prefixes {
		if strings.HasPrefix(m, p.prefix) {
			return p.enc
		}
	}
	return o200kBase
}

var prefixes = []struct {
	prefix string
	enc    encoding
}{
	{"ft:gpt-4o", o200kBase},
	{"ft:gpt-4.1", o200kBase},
	{"ft:gpt-4", cl100kBase},
	{"ft:gpt-3.5-turbo", cl100kBase},
	{"ft:davinci-002", cl100kBase},
	{"ft:babbage-002", cl100kBase},
	{"gpt-5", o200kBase},
	{"gpt-4.5", o200kBase},
	{"gpt-4.1", o200kBase},
	{"gpt-4o", o200kBase},
	{"chatgpt-4o", o200kBase},
	{"gpt-oss", o200kBase},
	{"o1", o200kBase},
	{"o3", o200kBase},
	{"o4-mini", o200kBase},
	{"codex-", o200kBase},
	{"gpt-4-", cl100kBase},
	{"gpt-3.5-turbo", cl100kBase},
	{"gpt-35-turbo", cl100kBase},
	{"code-davinci-", p50kBase},
	{"code-cushman-", p50kBase},
	{"davinci-codex", p50kBase},
	{"cushman-codex", p50kBase},
	{"text-similarity-", r50kBase},
	{"text-search-", r50kBase},
	{"code-search-", r50kBase},
	{"text-ada-001", r50kBase},
	{"text-babbage-001", r50kBase},
	{"text-curie-001", r50kBase},
	{"text-davinci-001", r50kBase},
}

// CountOpenAI counts body for an OpenAI model, named as upstream knows it
// ("gpt-4o", "gpt-4.1-mini", "gpt-3.5-turbo"), and returns the tiktoken
// encoding it used.
//
// Messages are counted with the OpenAI cookbook's chat formula: 3 tokens of
// framing per message plus its role and content, and 3 for the primed reply.
// The count is exact for plain text conversations. The rest is approximate:
// tool definitions are counted as their JSON (OpenAI adds an undocumented,
// model-specific overhead), tool calls as name plus arguments, images by
// OpenAI's high-detail tile formula from the dimensions in the image header
// (765 when they cannot be read), PDFs at 1,500 tokens per page found.
// Thinking blocks count only in a final assistant turn, as Anthropic counts
// them. A malformed body yields a *providers.APIError with status 400.
func (c *Counter) CountOpenAI(body []byte, upstreamModel string) (n int, encodingName string, err error) {
	p, err := parse(body)
	if err != nil {
		return 0, "", err
	}
	e := encodingFor(upstreamModel)
	n, err = p.count(c.codec(e))
	if err != nil {
		return 0, "", err
	}
	return n, e.String(), nil
}

// Estimate counts body for a model whose tokenizer the gateway does not have
// (Ollama, OpenAI-compatible local servers without a tokenize endpoint). It
// is CountOpenAI with o200k_base as a proxy vocabulary: the same text, the
// same framing. Open-weight tokenizers (Llama 3's 128k, Qwen's 151k
// vocabulary...) are byte-level BPEs trained on similar data, so the count
// is of the right size, not exact: treat it as an estimate.
func (c *Counter) Estimate(body []byte) (int, error) {
	p, err := parse(body)
	if err != nil {
		return 0, err
	}
	return p.count(c.codec(o200kBase))
}

// count applies the chat formula to the prompt with the given vocabulary.
func (p *prompt) count(enc *codec.Codec) (int, error) {
	var total int
	var err error
	add := func(s string) {
		if s == "" || err != nil {
			return
		}
		var n int
		n, err = enc.Count(s)
		total += n
	}
	total += replyPriming
	for i := range p.messages {
		m := &p.messages[i]
		total += perMessage + m.extra
		add(m.role)
		add(m.text)
		for _, tc := range m.toolCalls {
			add(tc.name)
			add(string(tc.arguments))
		}
	}
	for _, t := range p.tools {
		add(string(t.countedJSON))
	}
	return total, err
}

// The cookbook's constants for gpt-3.5-turbo-0613 and later: every message is
// <|start|>{role}<|message|>{content}<|end|>, and the reply is primed with
// <|start|>assistant<|message|>.
const (
	perMessage   = 3
	replyPriming = 3
)
