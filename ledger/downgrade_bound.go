package ledger

// DowngradeBound is what lets an at_cap downgrade go to a priced alias
// (docs/spend-limits-api.md, "At the cap"): the dearest price any
// deployment of the alias's chain, fallbacks included, may have, and the
// allowance past the cap that downgraded requests may spend in the
// limit's period. The zero value allows only a free alias.
type DowngradeBound struct {
	// MaxInputPico and MaxOutputPico are prices per token in picodollars
	// ($1 per million tokens is 1e6).
	MaxInputPico  int64 `json:"max_input_pico,omitempty"`
	MaxOutputPico int64 `json:"max_output_pico,omitempty"`
	// AllowanceCents is how far past the cap the downgraded requests may
	// spend; counted on the limit's own spend, so the money past the cap
	// is at most this.
	AllowanceCents int64 `json:"allowance_cents,omitempty"`
}

// Priced reports a bound that lets a priced alias take requests past the
// cap: a price bound and an allowance.
func (b DowngradeBound) Priced() bool {
	return b.AllowanceCents > 0 && (b.MaxInputPico > 0 || b.MaxOutputPico > 0)
}

// Admits reports whether a chain whose dearest prices per token are
// inputPico and outputPico is within b.
func (b DowngradeBound) Admits(inputPico, outputPico int64) bool {
	return b.Priced() && inputPico <= b.MaxInputPico && outputPico <= b.MaxOutputPico
}

// DearestInput is the most an input token can cost at p: its plain price
// or a cache write's (a 1h write is twice the input on Anthropic, and
// model_info may set more), whichever is dearer. A bound on input and
// an input reservation hold only at this price.
func (p Prices) DearestInput() int64 {
	return max(p.Input, p.CacheWrite5m, p.CacheWrite1h)
}
