package providers

// Turn is a client request parsed whole because its format is not one the
// gateway only peeks: a Responses turn, a Gemini turn or an embeddings
// request. Handlers use it through this interface and RequestInfo's
// methods, never by its type; the routes built for its client format know
// its type.
type Turn interface {
	// SetAlias records the alias the request's model resolved to: the
	// answer names it.
	SetAlias(alias string)
	// CountBody is the request as an Anthropic Messages body, what the
	// free token counts count.
	CountBody() ([]byte, error)
	// limits is what the turn asks of the upstream, for reservations.
	limits() turnLimits
	// sessionKey is the conversation key the client sent (Responses'
	// prompt_cache_key), "" when none.
	sessionKey() string
}

// turnLimits bound a turn's use before it runs.
type turnLimits struct {
	output  int64 // the output limit the client wrote; 0 when none
	choices int64 // answers asked for, at least 1
	history int64 // bytes of stored input the gateway adds to the body
	// referenced: that stored input carries content given by reference.
	referenced bool
	noOutput   bool // the request produces no output tokens (embeddings)
}

// SetAlias records the alias the request's model resolved to on its turn,
// if it has one.
func (info RequestInfo) SetAlias(alias string) {
	if info.Turn != nil {
		info.Turn.SetAlias(alias)
	}
}

// CountBody is the request as an Anthropic Messages body for a free token
// count: body itself for a Messages request, the turn's rendering for the
// formats parsed whole.
func (info RequestInfo) CountBody(body []byte) ([]byte, error) {
	if info.Turn != nil {
		return info.Turn.CountBody()
	}
	return body, nil
}

// SessionKey is the conversation key the request carries (a Responses
// request's prompt_cache_key), "" when none.
func (info RequestInfo) SessionKey() string {
	if info.Turn != nil {
		return info.Turn.sessionKey()
	}
	return ""
}

// KeptResponse is the Responses turn whose finished response the client
// asked the gateway to store (store, and a completed or incomplete
// status); nil for every other request.
func (info RequestInfo) KeptResponse() *ResponsesTurn {
	t := info.responses()
	if t == nil || !t.Stored() || t.Response == nil || (t.Status != "completed" && t.Status != "incomplete") {
		return nil
	}
	return t
}

// responses, gemini and embed are the turn as the routes of its client
// format read it; nil for a request of another format.
func (info RequestInfo) responses() *ResponsesTurn {
	t, _ := info.Turn.(*ResponsesTurn)
	return t
}

func (info RequestInfo) gemini() *GeminiTurn {
	t, _ := info.Turn.(*GeminiTurn)
	return t
}

func (info RequestInfo) converse() *ConverseTurn {
	t, _ := info.Turn.(*ConverseTurn)
	return t
}

func (info RequestInfo) embed() *EmbedTurn {
	t, _ := info.Turn.(*EmbedTurn)
	return t
}

// Info is what the gateway routes a Responses request by.
func (t *ResponsesTurn) Info() RequestInfo {
	return RequestInfo{Model: t.Req.Model, Stream: t.Req.Stream, Turn: t}
}

// SetAlias implements Turn.
func (t *ResponsesTurn) SetAlias(alias string) { t.Alias = alias }

func (t *ResponsesTurn) limits() turnLimits {
	l := turnLimits{choices: 1, history: t.resolvedBytes, referenced: t.referenced}
	if m := t.Req.MaxOutputTokens; m != nil && *m > 0 {
		l.output = *m
	}
	return l
}

func (t *ResponsesTurn) sessionKey() string {
	if k := t.Req.PromptCacheKey; k != nil {
		return *k
	}
	return ""
}

// SetAlias implements Turn.
func (t *GeminiTurn) SetAlias(alias string) { t.Alias = alias }

// CountBody implements Turn: the request for its alias, as count_tokens
// counts it.
func (t *GeminiTurn) CountBody() ([]byte, error) { return t.countBody(t.Alias) }

func (t *GeminiTurn) limits() turnLimits {
	l := turnLimits{choices: 1}
	if g := t.req.GenerationConfig; g != nil {
		if g.MaxOutputTokens != nil && *g.MaxOutputTokens > 0 {
			l.output = *g.MaxOutputTokens
		}
		if g.CandidateCount != nil && *g.CandidateCount > 1 {
			l.choices = min(*g.CandidateCount, 1<<20)
		}
	}
	return l
}

func (t *GeminiTurn) sessionKey() string { return "" }

// SetAlias implements Turn.
func (t *ConverseTurn) SetAlias(alias string) { t.Alias = alias }

// CountBody implements Turn: the request for its alias, as count_tokens
// counts it.
func (t *ConverseTurn) CountBody() ([]byte, error) {
	chat, err := t.toChat(t.Alias, false, chatOptions{Anthropic: true})
	if err != nil {
		return nil, err
	}
	return countBodyFromChat(chat, t.Alias)
}

func (t *ConverseTurn) limits() turnLimits {
	l := turnLimits{choices: 1}
	if c := t.req.InferenceConfig; c != nil && c.MaxTokens != nil && *c.MaxTokens > 0 {
		l.output = *c.MaxTokens
	}
	return l
}

func (t *ConverseTurn) sessionKey() string { return "" }

// SetAlias implements Turn.
func (t *EmbedTurn) SetAlias(alias string) { t.Alias = alias }

// CountBody implements Turn: embeddings have no free count.
func (t *EmbedTurn) CountBody() ([]byte, error) {
	return nil, BadRequest("model", "embeddings requests have no token count")
}

func (t *EmbedTurn) limits() turnLimits { return turnLimits{choices: 1, noOutput: true} }

func (t *EmbedTurn) sessionKey() string { return "" }

var (
	_ Turn = (*ResponsesTurn)(nil)
	_ Turn = (*GeminiTurn)(nil)
	_ Turn = (*EmbedTurn)(nil)
	_ Turn = (*ConverseTurn)(nil)
)
