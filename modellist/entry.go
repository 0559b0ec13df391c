package modellist

import (
	"fmt"
	"net/textproto"
	"net/url"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// entry parses model_list[i]. It returns nil if the entry has any error, so
// that a half-valid deployment never reaches the router.
func (p *parser) entry(i int, n *yaml.Node) *Deployment {
	w := where{entry: entryLabel(i, n)}
	fs, ok := p.mapping(n, w, entryFields(), "model_name, proxy_params, model_info")
	if !ok {
		p.partial = true
		return nil
	}
	n = deref(n)
	errsBefore := len(p.errs)
	d := &Deployment{Index: i, Weight: 1}

	if f, ok := fs["model_name"]; !ok {
		p.errorf(n, w.sub("model_name"), "required: the alias clients send as \"model\"; add model_name: <alias>")
	} else if s, ok := p.scalar(f.val, w.sub("model_name")); ok {
		switch {
		case s == "" || strings.TrimSpace(s) != s:
			p.errorf(f.val, w.sub("model_name"), "must not be empty or start or end with spaces; clients must send it verbatim")
		case strings.IndexFunc(s, unicode.IsControl) >= 0:
			p.errorf(f.val, w.sub("model_name"), "contains control characters; use a plain name")
		default:
			d.Alias = s
			p.nameEntry(s)
		}
	}
	if d.Alias == "" {
		p.partial = true
	}

	pw := w.sub("proxy_params")
	pf, ok := fs["proxy_params"]
	if !ok {
		p.errorf(n, pw, "required; add proxy_params: with at least model: <provider>/<model>")
		return nil
	}
	before := len(p.errs)
	params, ok := p.mapping(pf.val, pw, paramFields(), "model, api_base, api_key, ...")
	if !ok {
		return nil
	}
	// A misspelt api_base or api_key would also trip the rules about them;
	// report only the typo, which is the real fix.
	p.params(d, params, pf.key, pw, len(p.errs) == before)

	if f, ok := fs["model_info"]; ok && !isNull(deref(f.val)) {
		p.info(d, f.val, w.sub("model_info"))
	}
	d.ReasonsUnseen = ReasonsUnseen(d.Model, d.Info.SupportsReasoning)
	if f, ok := fs["secrets"]; ok {
		p.secrets(d, f.val, w.sub("secrets"))
	}
	if len(p.errs) > errsBefore {
		return nil
	}
	return d
}

// entryLabel names an entry by index and, when readable, its model_name,
// so that even an unknown-field error says which entry it is in.
func entryLabel(i int, n *yaml.Node) string {
	label := fmt.Sprintf("model_list[%d]", i)
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return label
	}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], deref(n.Content[j+1])
		if k.Value == "model_name" && v != nil && v.Kind == yaml.ScalarNode && !isNull(v) {
			return fmt.Sprintf("%s (model_name %q)", label, v.Value)
		}
	}
	return label
}

// n locates errors about missing fields: the proxy_params key.
func (p *parser) params(d *Deployment, fs map[string]field, n *yaml.Node, w where, checkRules bool) {
	mf, ok := fs["model"]
	if !ok {
		p.errorf(n, w.sub("model"), "required: <provider>/<model>, e.g. ollama/llama3.1 or anthropic/claude-sonnet-4-5 (providers: %s)", knownList())
		return
	}
	spec, ok := p.model(d, mf.val, w.sub("model"))
	if !ok {
		return
	}

	var baseNode, keyNode *yaml.Node
	var base, key string
	readOK := true
	if f, ok := fs["api_base"]; ok {
		baseNode = f.val
		base, ok = p.optional(f.val, w.sub("api_base"))
		readOK = readOK && ok
	}
	if f, ok := fs["api_key"]; ok {
		keyNode = f.val
		key, ok = p.optional(f.val, w.sub("api_key"))
		readOK = readOK && ok
	}
	p.options(d, fs, w)
	p.seat(d, fs, w)
	p.batchMode(d, fs, w)
	p.foreignAccountFields(d, fs, w)
	if !readOK || !checkRules {
		return
	}
	bw, kw := w.sub("api_base"), w.sub("api_key")
	if baseNode == nil {
		baseNode = n
	}
	if keyNode == nil {
		keyNode = n
	}

	if !p.seatRules(d, fs, key, keyNode, w) {
		return
	}
	compat := false // a chat-completions-compatible server the user runs
	switch spec.cat {
	case catAccount:
		if key != "" {
			p.errorf(keyNode, kw, "%s/ authenticates with the cloud account's own credentials, not an api_key; remove it (%s)", d.Provider, accountHint(d.Kind))
			return
		}
		if base != "" {
			if base, ok = p.apiBase(base, baseNode, bw, spec.kind, false); !ok {
				return
			}
		}
		p.account(d, fs, w, n, base)
		if d.APIBase != "" {
			p.upstreamTLS(d, fs, w)
		}
		p.responsesAPI(d, fs, w)
		return
	case catEcho:
		d.Local = true
		if base != "" {
			p.errorf(baseNode, bw, "echo/ is built in and takes no api_base; remove it")
		}
		if key != "" {
			p.errorf(keyNode, kw, "echo/ is built in and takes no api_key; remove it")
		}
		p.responsesAPI(d, fs, w)
		return
	case catLocalNative:
		d.Local = true
		if base == "" {
			p.errorf(baseNode, bw, "required for %s/: the Ollama server root, e.g. api_base: http://localhost:11434", d.Provider)
			return
		}
	case catLocalCompat:
		d.Local, compat = true, true
		if base == "" {
			p.errorf(baseNode, bw, "required for %s/: the server's version root, e.g. api_base: http://localhost:8000/v1", d.Provider)
			return
		}
	case catCloud:
		switch {
		case d.Provider == "openai" && base != "" && strings.TrimRight(base, "/") != spec.cloudBase:
			// Rule 4: openai/ with api_base is a server the user runs.
			d.Local, compat = true, true
		case base == "":
			base = spec.cloudBase
		}
	}
	if base != spec.cloudBase || spec.cat != catCloud {
		if base, ok = p.apiBase(base, baseNode, bw, spec.kind, compat); !ok {
			return
		}
	}
	d.APIBase = base

	switch {
	case d.PassthroughAuth:
	case compat && key == "":
		p.errorf(keyNode, kw, "required for a chat-completions-compatible server at api_base; set any value, e.g. api_key: none")
		return
	case spec.cat == catCloud && !compat && key == "":
		p.errorf(keyNode, kw, "required: %s/ is a cloud API and needs a real key; set api_key: os.environ/%s_API_KEY and export that variable",
			d.Provider, strings.ToUpper(d.Provider))
		return
	case spec.cat == catCloud && !compat && isPlaceholder(key):
		p.warnf(keyNode, kw, "looks like a placeholder, but %s/ is a cloud API that needs a real key; requests will be refused upstream", d.Provider)
	}
	if key != "" {
		if strings.TrimSpace(key) != key {
			p.errorf(keyNode, kw, "has leading or trailing whitespace (often a newline from $(cat file)); strip it")
			return
		}
		if strings.IndexFunc(key, unicode.IsControl) >= 0 {
			p.errorf(keyNode, kw, "contains control characters; check the value or the environment variable it comes from")
			return
		}
	}
	d.APIKey = key
	p.upstreamTLS(d, fs, w)
	p.responsesAPI(d, fs, w)
}

// responsesAPI settles how Responses API requests reach the deployment:
// as they are, to a server that serves /responses itself (OpenAI's own
// API by default), or translated to chat completions.
func (p *parser) responsesAPI(d *Deployment, fs map[string]field, w where) {
	d.ResponsesNative = d.Provider == "openai" && !d.Local
	f, ok := fs["responses_api"]
	if !ok || isNull(deref(f.val)) {
		return
	}
	rw := w.sub("responses_api")
	s, ok := p.scalar(f.val, rw)
	if !ok {
		return
	}
	switch s {
	case "native":
		if d.Kind != KindOpenAI && d.Kind != KindOllama {
			p.errorf(f.val, rw, "native needs a server that serves /responses itself (openai/ or a compatible server, ollama/); %s/ is always translated: remove the line", d.Provider)
			return
		}
		d.ResponsesNative = true
	case "translate":
		d.ResponsesNative = false
	default:
		p.errorf(f.val, rw, "%q is not a choice: native (the server serves /responses) or translate (through chat completions)", s)
	}
}

// options reads the optional per-deployment settings.
func (p *parser) options(d *Deployment, fs map[string]field, w where) {
	if f, ok := fs["timeout"]; ok {
		d.Timeout, _ = p.duration(f.val, w.sub("timeout"), false)
	}
	if f, ok := fs["stream_timeout"]; ok {
		d.StreamTimeout, _ = p.duration(f.val, w.sub("stream_timeout"), false)
	}
	if f, ok := fs["max_retries"]; ok {
		if v, ok := p.count(f.val, w.sub("max_retries"), 100); ok {
			r := int(v)
			d.MaxRetries = &r
		}
	}
	if f, ok := fs["rpm"]; ok {
		d.RPM, _ = p.count(f.val, w.sub("rpm"), 1<<62)
	}
	if f, ok := fs["tpm"]; ok {
		d.TPM, _ = p.count(f.val, w.sub("tpm"), 1<<62)
	}
	if f, ok := fs["weight"]; ok {
		if v, ok := p.weight(f.val, w.sub("weight")); ok {
			d.Weight = v
		}
	}
	if f, ok := fs["extra_headers"]; ok && !isNull(deref(f.val)) {
		d.ExtraHeaders = p.headers(f.val, w.sub("extra_headers"))
	}
}

// model splits proxy_params.model into provider and upstream model.
func (p *parser) model(d *Deployment, n *yaml.Node, w where) (providerSpec, bool) {
	s, ok := p.scalar(n, w)
	if !ok {
		return providerSpec{}, false
	}
	n = deref(n)
	if strings.HasPrefix(s, "os.environ/") {
		p.errorf(n, w, "os.environ/ is resolved only in api_key, api_base, extra_headers and the aws_ and vertex_ fields; write the model name here")
		return providerSpec{}, false
	}
	prefix, name, found := strings.Cut(s, "/")
	if !found {
		p.errorf(n, w, "%q has no provider prefix; write <provider>/%s, e.g. openai/%s or ollama/%s (providers: %s)", s, s, s, s, knownList())
		return providerSpec{}, false
	}
	spec, known := lookupProvider(prefix)
	if !known {
		hint := ""
		if _, ok := lookupProvider(strings.ToLower(prefix)); ok {
			hint = fmt.Sprintf("; prefixes are lowercase: %s/", strings.ToLower(prefix))
		} else if h := suggest(prefix, knownProviders()); h != "" {
			hint = h
		}
		p.errorf(n, w, "unknown provider prefix %q%s (known: %s)", prefix, hint, knownList())
		return providerSpec{}, false
	}
	if name == "" {
		p.errorf(n, w, "no model after %q; write %s<model>, e.g. %sllama3.1", prefix+"/", prefix+"/", prefix+"/")
		return providerSpec{}, false
	}
	d.Provider, d.Kind, d.Model = prefix, spec.kind, name
	return spec, true
}

// optional reads a string field that may resolve through os.environ/NAME.
// A null value reads as "", so that the caller's rule gives the fix.
func (p *parser) optional(n *yaml.Node, w where) (string, bool) {
	n = deref(n)
	if isNull(n) {
		return "", true
	}
	s, ok := p.scalar(n, w)
	if !ok {
		return "", false
	}
	return p.env(s, n, w)
}

// env resolves an os.environ/NAME reference. Only the variable's name ever
// appears in messages.
func (p *parser) env(s string, n *yaml.Node, w where) (string, bool) {
	name, isRef := strings.CutPrefix(s, "os.environ/")
	if !isRef {
		return s, true
	}
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '=' }) {
		p.errorf(n, w, "os.environ/ needs a variable name, e.g. os.environ/ANTHROPIC_API_KEY")
		return "", false
	}
	v, set := p.getenv(name)
	if !set || v == "" {
		p.errorf(n, w, "environment variable %s is unset or empty; export it in the environment Caddy starts with (shell, systemd Environment=/EnvironmentFile=, container env)", name)
		return "", false
	}
	return v, true
}

// apiBase checks an api_base URL and returns it without a trailing slash.
// The URL itself is not echoed: it may have come from the environment.
func (p *parser) apiBase(base string, n *yaml.Node, w where, kind Kind, compat bool) (string, bool) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		p.errorf(n, w, "must be an http:// or https:// URL with a host, e.g. %s", exampleBase(kind))
		return "", false
	}
	if u.User != nil {
		p.errorf(n, w, "must not contain credentials (they would be logged with the URL); put the secret in api_key or extra_headers")
		return "", false
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		p.errorf(n, w, "must not have a query or fragment; give the base URL only, e.g. %s", exampleBase(kind))
		return "", false
	}
	base = strings.TrimRight(base, "/")
	path := strings.TrimRight(u.Path, "/")
	last := path[strings.LastIndex(path, "/")+1:]
	switch kind {
	case KindOllama:
		switch {
		case isVersion(last):
			p.warnf(n, w, "ends in /%s, but ollama/ speaks Ollama's native API at the server root (the gateway appends /api/chat); remove /%s, or use openai/ for Ollama's OpenAI-compatible endpoint", last, last)
		case strings.HasSuffix(path, "/api") || strings.HasSuffix(path, "/api/chat"):
			p.warnf(n, w, "the gateway appends /api/chat itself; give the server root, e.g. http://localhost:11434")
		}
	case KindGemini:
		if strings.HasSuffix(path, "/openai") || isVersion(last) {
			p.errorf(n, w, "gemini/ speaks Google's native API at the server root (the gateway appends /v1beta/models/<model>:generateContent); give e.g. https://generativelanguage.googleapis.com, or use openai/ with this api_base for Google's OpenAI-compatible endpoint")
			return "", false
		}
	case KindAnthropic:
		switch {
		case isVersion(last):
			p.warnf(n, w, "ends in /%s, but an anthropic/ api_base is the root without /v1, as ANTHROPIC_BASE_URL is (the gateway appends /v1/messages); remove /%s", last, last)
		case strings.HasSuffix(path, "/messages"):
			p.warnf(n, w, "the gateway appends /v1/messages itself; give the root, e.g. https://api.anthropic.com")
		}
	case KindBedrock:
		if strings.Contains(path, "/model/") {
			p.warnf(n, w, "the gateway appends /model/<model id>/invoke itself; give the endpoint root, e.g. %s", exampleBase(kind))
		}
	case KindVertex:
		if strings.Contains(path, "/projects/") {
			p.warnf(n, w, "the gateway appends /v1/projects/<project>/locations/<location>/… itself; give the endpoint root, e.g. %s", exampleBase(kind))
		}
	case KindOpenAI:
		switch {
		case strings.HasSuffix(path, "/chat/completions"):
			p.warnf(n, w, "the gateway appends /chat/completions itself; end api_base at the version root, e.g. http://localhost:1234/v1")
		case !hasVersionSegment(path):
			what := "an OpenAI-compatible API"
			if compat {
				what = "a chat-completions-compatible server"
			}
			p.warnf(n, w, "has no version segment such as /v1; %s is addressed at its version root (the gateway appends /chat/completions), so add /v1 unless the server really serves /chat/completions at this path", what)
		}
	}
	return base, true
}

func exampleBase(kind Kind) string {
	switch kind {
	case KindOllama:
		return "http://localhost:11434"
	case KindAnthropic:
		return "https://api.anthropic.com"
	case KindGemini:
		return "https://generativelanguage.googleapis.com"
	case KindBedrock:
		return "https://bedrock-runtime.us-east-1.amazonaws.com"
	case KindVertex:
		return "https://us-east5-aiplatform.googleapis.com"
	}
	return "http://localhost:1234/v1"
}

// isVersion reports whether a path segment is an API version: v1, v2,
// v1beta, v1alpha2.
func isVersion(seg string) bool {
	if len(seg) < 2 || seg[0] != 'v' || seg[1] < '0' || seg[1] > '9' {
		return false
	}
	i := 1
	for i < len(seg) && seg[i] >= '0' && seg[i] <= '9' {
		i++
	}
	for i < len(seg) && seg[i] >= 'a' && seg[i] <= 'z' {
		i++
	}
	for i < len(seg) && seg[i] >= '0' && seg[i] <= '9' {
		i++
	}
	return i == len(seg)
}

// hasVersionSegment accepts a version anywhere in the path because some
// providers put a suffix after it (Gemini's /v1beta/openai).
func hasVersionSegment(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		if isVersion(seg) {
			return true
		}
	}
	return false
}

func isPlaceholder(key string) bool {
	switch strings.ToLower(key) {
	case "none", "dummy", "na", "n/a", "x", "-", "empty", "null", "placeholder", "changeme", "sk-xxx", "your-key", "your-api-key":
		return true
	}
	return false
}

func (p *parser) headers(n *yaml.Node, w where) map[string]string {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, w, "must be a mapping of header name to value, e.g. X-Team: platform")
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || !isToken(k.Value) {
			p.errorf(k, w, "header names must be plain tokens like X-Team")
			continue
		}
		name := textproto.CanonicalMIMEHeaderKey(k.Value)
		hw := w.sub(k.Value)
		switch name {
		case "Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "Te", "Trailer", "Proxy-Connection":
			p.errorf(k, hw, "is set by the gateway for each request; remove it")
			continue
		}
		if _, dup := out[name]; dup {
			p.errorf(k, hw, "given twice (header names ignore case); keep one")
			continue
		}
		if isNull(deref(v)) {
			p.errorf(v, hw, "is empty; give it a value or remove the header")
			continue
		}
		s, ok := p.scalar(v, hw)
		if !ok {
			continue
		}
		s, ok = p.env(s, deref(v), hw)
		if !ok {
			continue
		}
		if strings.ContainsAny(s, "\r\n\x00") {
			p.errorf(v, hw, "value contains a line break or NUL; check the value or the environment variable it comes from")
			continue
		}
		out[name] = s
	}
	return out
}

// isToken reports whether s is an HTTP field name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// maxOutputTokens is the largest model_info.max_output_tokens: upstreams
// read an output bound as a 32-bit integer (Gemini's maxOutputTokens is
// int32), so a larger one would only be refused there.
const maxOutputTokens = 1<<31 - 1

func (p *parser) info(d *Deployment, n *yaml.Node, w where) {
	fs, ok := p.mapping(n, w, infoFields(), strings.Join(infoFields(), ", "))
	if !ok {
		return
	}
	prices := []struct {
		name string
		dst  **int64
	}{
		{"input_cost_per_token", &d.Info.InputCostPerToken},
		{"output_cost_per_token", &d.Info.OutputCostPerToken},
		{"cache_read_input_token_cost", &d.Info.CacheReadInputTokenCost},
		{"cache_creation_input_token_cost", &d.Info.CacheCreationInputTokenCost},
		{"cache_creation_input_token_cost_above_1hr", &d.Info.CacheCreation1hInputTokenCost},
	}
	for _, pr := range prices {
		f, ok := fs[pr.name]
		if !ok || isNull(deref(f.val)) {
			continue
		}
		*pr.dst = p.price(f.val, w.sub(pr.name))
	}
	if f, ok := fs["max_input_tokens"]; ok {
		d.Info.MaxInputTokens, _ = p.count(f.val, w.sub("max_input_tokens"), 1<<62)
	}
	if f, ok := fs["max_output_tokens"]; ok {
		d.Info.MaxOutputTokens, _ = p.count(f.val, w.sub("max_output_tokens"), maxOutputTokens)
	}
	if f, ok := fs["supports_reasoning"]; ok && !isNull(deref(f.val)) {
		if v, ok := p.flag(f.val, w.sub("supports_reasoning"), "true or false"); ok {
			d.Info.SupportsReasoning = &v
		}
	}
}
