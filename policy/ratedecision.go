package policy

// RateDecision is what a rate admission tells the caller of one scope's
// windows (the key's, or the workspace's that refused): the door renders
// it as the client format's rate-limit headers. The zero value, a scope
// with neither an rpm nor a tpm limit, shows nothing.
type RateDecision struct {
	// Requests is the rpm window, Tokens the tpm window; a Limit of 0 is
	// no limit of that kind.
	Requests, Tokens RateWindow
	// ResetAt is when both windows end (Unix seconds); ResetIn the whole
	// seconds until then, never negative.
	ResetAt, ResetIn int64
}

// RateWindow is one window's limit and what is left of it.
type RateWindow struct {
	Limit, Remaining int64
}

// Shown reports whether the decision has a window to show.
func (d RateDecision) Shown() bool { return d.Requests.Limit > 0 || d.Tokens.Limit > 0 }
