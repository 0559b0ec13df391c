package modellist

import (
	"net"
	"net/url"
	"strings"
)

// Free reports whether a request served by d costs nothing, and when it
// does not, why (for an error naming the entry): the built-in echo; a
// deployment whose model_info prices input and output tokens at 0; or a
// local server's own prefix (ollama/, ollama_chat/, hosted_vllm/,
// lm_studio/, llamacpp/) on this machine or a private network. A cloud
// model is never free for lack of a price: a model missing from the price
// table (a new model, a fine-tune, a router's or Azure's deployment name)
// costs money all the same; and openai/ at an api_base may be a paid
// service or a proxy to one, wherever it listens, so it is free only
// priced at 0.
// Spend limits' at_cap downgrade sends requests past a spent budget only
// to aliases whose every deployment is free.
func (d *Deployment) Free() (bool, string) {
	if in, out := d.Info.InputCostPerToken, d.Info.OutputCostPerToken; in != nil && out != nil {
		if *in == 0 && *out == 0 {
			return true, ""
		}
		return false, d.Provider + "/" + d.Model + " is priced in model_info"
	}
	switch {
	case d.Kind == KindEcho:
		return true, ""
	case !d.Local:
		return false, d.Provider + "/" + d.Model + " is a cloud model; an unpriced one is not free" + priceZero
	case d.Provider == "openai":
		return false, "openai/" + d.Model + " at an api_base may be a paid service or a proxy to one" + priceZero
	case d.PassthroughAuth:
		return false, d.Provider + "/" + d.Model + " is called with the caller's own provider credential"
	case !PrivateHost(d.APIBase):
		return false, "its api_base " + hostOf(d.APIBase) + " is not on this machine or a private network, so it may be a paid service" + priceZero
	}
	return true, ""
}

// priceZero says how to declare a deployment free.
const priceZero = " (if it costs nothing, say so: model_info input_cost_per_token: 0 and output_cost_per_token: 0)"

// PrivateHost reports whether base's host is this machine or a private
// network: a loopback, private (RFC 1918, unique local) or link-local
// address, localhost, or a name only a private resolver answers (a
// single label such as a Compose service, or .internal, .local,
// .localhost, .svc.cluster.local).
func PrivateHost(base string) bool {
	h := hostOf(base)
	if h == "" {
		return false
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "localhost" || !strings.Contains(h, ".") {
		return true
	}
	for _, suffix := range []string{".localhost", ".internal", ".local", ".svc.cluster.local", ".home.arpa"} {
		if strings.HasSuffix(h, suffix) {
			return true
		}
	}
	return false
}

func hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
