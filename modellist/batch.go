package modellist

// The batch setting of an entry: whether a batch whose requests all go to
// this entry's upstream is sent to the provider's own batch API
// (docs/batches.md).

// The values of batch.
const (
	// BatchAuto passes batches through to Anthropic's and OpenAI's own
	// APIs (anthropic/ and openai/ entries at the provider's own
	// address), the default.
	BatchAuto = ""
	// BatchGateway has the gateway run every batch itself.
	BatchGateway = "gateway"
	// BatchProvider passes batches through also where the address is
	// not the provider's own (a proxy, a regional endpoint, a test fake):
	// the operator says it serves the provider's batch API.
	BatchProvider = "provider"
)

// batchMode reads batch: auto, gateway or provider.
func (p *parser) batchMode(d *Deployment, fs map[string]field, pw where) {
	f, ok := fs["batch"]
	if !ok || isNull(deref(f.val)) {
		return
	}
	w := pw.sub("batch")
	s, ok := p.scalar(f.val, w)
	if !ok {
		return
	}
	switch s {
	case "auto":
	case BatchGateway:
		d.Batch = BatchGateway
	case BatchProvider:
		d.Batch = BatchProvider
		if d.Kind != KindAnthropic && d.Provider != "openai" {
			p.errorf(f.val, w, "provider is for anthropic/ and openai/ entries, whose providers have batch APIs; %s/ batches are run by the gateway: remove it or set gateway", d.Provider)
		}
	default:
		p.errorf(f.val, w, "%q is not a choice: auto (the default: Anthropic's and OpenAI's own batch APIs), gateway (the gateway runs every batch) or provider (this api_base serves the provider's batch API)", s)
	}
}
