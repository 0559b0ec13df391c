package modellist

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Field lists, in the order messages show them. Functions rather than
// package variables so that nothing at package level can be mutated.
func topFields() []string {
	return []string{"model_list", "router_settings", "model_aliases", "mcp_servers"}
}
func entryFields() []string {
	return []string{"model_name", "proxy_params", "model_info", "secrets"}
}
func paramFields() []string {
	return []string{"model", "api_base", "api_key", "timeout", "stream_timeout", "max_retries", "rpm", "tpm", "weight", "extra_headers",
		"tls_ca_file", "tls_client_cert", "tls_client_key", "responses_api",
		"passthrough_auth", "passthrough_budget", "first_token_timeout", "assistant_prefill", "batch",
		"aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_region_name",
		"vertex_project", "vertex_location", "vertex_credentials"}
}

// awsFields and vertexFields belong to one provider each.
func awsFields() []string {
	return []string{"aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_region_name"}
}
func vertexFields() []string {
	return []string{"vertex_project", "vertex_location", "vertex_credentials"}
}
func infoFields() []string {
	return []string{"input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost", "cache_creation_input_token_cost", "cache_creation_input_token_cost_above_1hr", "max_input_tokens", "max_output_tokens", "supports_reasoning"}
}
func routerFields() []string {
	return []string{"routing_strategy", "num_retries", "timeout", "stream_timeout", "fallbacks", "cooldown_time", "allowed_fails", "session_affinity", "first_token_timeout"}
}

// Parse parses and validates a models file. source names the file in
// messages. getenv resolves os.environ/NAME references; nil means
// os.LookupEnv. Warnings are for configurations that load but are probably
// wrong (an api_base contradicting its kind, say). All errors found are
// returned together, joined with errors.Join.
func Parse(data []byte, source string, getenv func(string) (string, bool)) (*Config, []string, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	if source == "" {
		source = "models.yaml"
	}
	p := &parser{source: source, getenv: getenv}
	root, extra, err := decodeDocument(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", source, err)
	}
	if extra != nil {
		p.errorf(extra, where{}, "a second YAML document (after ---) is not supported; put everything in one document")
		return nil, nil, errors.Join(p.errs...)
	}
	c := p.config(root)
	if len(p.errs) > 0 {
		return nil, p.warns, errors.Join(p.errs...)
	}
	return c, p.warns, nil
}

// decodeDocument returns the top-level node of the YAML document in data
// (nil for an empty file) and, if there is one, the start of a second
// document, which is refused rather than silently ignored.
func decodeDocument(data []byte) (root, extra *yaml.Node, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, nil, err
		}
		return nil, &next, nil
	}
	if len(doc.Content) == 0 {
		return nil, nil, nil
	}
	return deref(doc.Content[0]), nil, nil
}

type parser struct {
	source string
	getenv func(string) (string, bool)
	errs   []error
	warns  []string
	// names are the model_names of every entry, broken ones included, in
	// order: a fallback or model_aliases target naming an entry that has
	// an error elsewhere is not also reported as unknown, and one naming
	// no entry is reported in the same pass as the entries' errors.
	names []string
	named map[string]bool
	// partial is set when some entry's model_name could not be read, so
	// that alias existence is not judged against an incomplete list.
	partial bool
}

// unknownAlias reports whether name is certainly not a model_name.
func (p *parser) unknownAlias(name string) bool {
	return !p.partial && !p.named[name]
}

// aliasList is the model_names for messages about unknown ones.
func (p *parser) aliasList() string { return strings.Join(p.names, ", ") }

// nameEntry records an entry's model_name.
func (p *parser) nameEntry(alias string) {
	if p.named == nil {
		p.named = map[string]bool{}
	}
	if !p.named[alias] {
		p.named[alias] = true
		p.names = append(p.names, alias)
	}
}

// where locates a message: the entry label (empty at top level) and the
// dotted field path.
type where struct {
	entry string
	field string
}

func (w where) sub(name string) where {
	if w.field == "" {
		w.field = name
	} else {
		w.field += "." + name
	}
	return w
}

func (w where) idx(i int) where {
	w.field += "[" + strconv.Itoa(i) + "]"
	return w
}

func (p *parser) format(n *yaml.Node, w where, msg string) string {
	var b strings.Builder
	b.WriteString(p.source)
	if n != nil && n.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(n.Line))
	}
	b.WriteString(": ")
	if w.entry != "" {
		b.WriteString(w.entry)
		b.WriteString(": ")
	}
	if w.field != "" {
		b.WriteString(w.field)
		b.WriteString(": ")
	}
	b.WriteString(msg)
	return b.String()
}

func (p *parser) errorf(n *yaml.Node, w where, format string, args ...any) {
	p.errs = append(p.errs, errors.New(p.format(n, w, fmt.Sprintf(format, args...))))
}

func (p *parser) warnf(n *yaml.Node, w where, format string, args ...any) {
	p.warns = append(p.warns, p.format(n, w, fmt.Sprintf(format, args...)))
}

// deref follows YAML aliases (*name) to the anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// field is one key of a mapping: the key node (for its line) and the value.
type field struct {
	key, val *yaml.Node
}

// mapping returns the known fields of a mapping node by name, reporting
// unknown and repeated keys. YAML merge keys (<<: *defaults) are honoured,
// explicit keys winning, because teams with many deployments share
// proxy_params that way. ok is false when n is not a mapping at all.
func (p *parser) mapping(n *yaml.Node, w where, known []string, what string) (map[string]field, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		p.errorf(n, w, "must be a mapping (%s); check the indentation", what)
		return nil, false
	}
	out := make(map[string]field, len(n.Content)/2)
	p.collect(n, w, known, out, 0)
	return out, true
}

func (p *parser) collect(n *yaml.Node, w where, known []string, out map[string]field, depth int) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, w, "keys must be plain names; found a %s", kindName(k))
			continue
		}
		name := k.Value
		if depth == 0 && w == (where{}) && strings.HasPrefix(name, "x-") {
			// Extension keys, as in docker-compose: a home for YAML anchors
			// (x-cloud: &cloud {...}) that the loader otherwise ignores.
			continue
		}
		if !slices.Contains(known, name) {
			p.errorf(k, w, "unknown field %q%s (known: %s)", name, suggest(name, known), knownFieldList(w, known))
			continue
		}
		if prev, dup := out[name]; dup && depth == 0 {
			p.errorf(k, w, "field %q given twice (first on line %d); keep one", name, prev.key.Line)
			continue
		} else if dup {
			continue // a merged-in key never overrides one already present
		}
		out[name] = field{k, v}
	}
	if depth >= 8 {
		if len(merges) > 0 {
			p.errorf(n, w, "merge keys (<<) nested too deeply; flatten the anchors")
		}
		return
	}
	for _, m := range merges {
		m = deref(m)
		var srcs []*yaml.Node
		switch m.Kind {
		case yaml.MappingNode:
			srcs = []*yaml.Node{m}
		case yaml.SequenceNode:
			for _, s := range m.Content {
				srcs = append(srcs, deref(s))
			}
		}
		for _, s := range srcs {
			if s == nil || s.Kind != yaml.MappingNode {
				p.errorf(m, w, "merge key (<<) must refer to a mapping, e.g. <<: *defaults")
				continue
			}
			p.collect(s, w, known, out, depth+1)
		}
	}
}

func kindName(n *yaml.Node) string {
	switch deref(n).Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "scalar"
}

// scalar returns the text of a non-null scalar, reporting anything else.
// The value itself is never echoed: it may be a secret.
func (p *parser) scalar(n *yaml.Node, w where) (string, bool) {
	n = deref(n)
	if isNull(n) {
		p.errorf(n, w, "is empty; give it a value or remove the field")
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, w, "must be a single value, not a %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

func (p *parser) config(root *yaml.Node) *Config {
	c := &Config{
		Router: RouterSettings{
			RoutingStrategy: StrategySimpleShuffle,
			NumRetries:      DefaultNumRetries,
			CooldownTime:    DefaultCooldownTime,
			AllowedFails:    DefaultAllowedFails,
			SessionAffinity: true,
		},
		byAlias:   map[string][]*Deployment{},
		fallbacks: map[string][]string{},
		exact:     map[string]string{},
	}
	if root == nil {
		p.errorf(nil, where{}, "the file is empty; it needs a model_list with at least one entry")
		return c
	}
	top, ok := p.mapping(root, where{}, topFields(), "model_list, router_settings, model_aliases, mcp_servers")
	if !ok {
		return c
	}
	p.modelList(c, top["model_list"], root)
	if f, ok := top["router_settings"]; ok && !isNull(deref(f.val)) {
		p.router(c, f.val)
	}
	if f, ok := top["model_aliases"]; ok && !isNull(deref(f.val)) {
		p.modelAliases(c, f.val)
	}
	if f, ok := top["mcp_servers"]; ok && !isNull(deref(f.val)) {
		p.mcpServers(c, f.val)
	}
	return c
}

func (p *parser) modelList(c *Config, f field, root *yaml.Node) {
	w := where{field: "model_list"}
	if f.key == nil {
		p.errorf(root, where{}, "model_list is missing; add model_list: with at least one entry (model_name and proxy_params.model)")
		return
	}
	list := deref(f.val)
	if isNull(list) || (list.Kind == yaml.SequenceNode && len(list.Content) == 0) {
		p.errorf(f.key, w, "is empty; add at least one entry (model_name and proxy_params.model)")
		return
	}
	if list.Kind != yaml.SequenceNode {
		p.errorf(list, w, "must be a list of entries, each starting with \"- model_name:\"")
		return
	}
	ordinals := map[string]int{}
	for i, n := range list.Content {
		d := p.entry(i, n)
		if d == nil {
			continue
		}
		identity := idInput(d)
		d.ID = deploymentID(identity, ordinals[identity])
		ordinals[identity]++
		c.Deployments = append(c.Deployments, d)
		if _, seen := c.byAlias[d.Alias]; !seen {
			c.aliases = append(c.aliases, d.Alias)
		}
		c.byAlias[d.Alias] = append(c.byAlias[d.Alias], d)
	}
	p.seatAliases(c)
}

// idInput is length-prefixed so that no two different tuples collide.
func idInput(d *Deployment) string {
	var b strings.Builder
	for _, s := range []string{d.Alias, d.Provider, d.Model, d.APIBase} {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	return b.String()
}

func deploymentID(identity string, ordinal int) string {
	sum := sha256.Sum256([]byte(identity + "#" + strconv.Itoa(ordinal)))
	return hex.EncodeToString(sum[:6])
}

func (p *parser) router(c *Config, n *yaml.Node) {
	w := where{field: "router_settings"}
	fs, ok := p.mapping(n, w, routerFields(), strings.Join(routerFields(), ", "))
	if !ok {
		return
	}
	r := &c.Router
	if f, ok := fs["routing_strategy"]; ok {
		if s, ok := p.scalar(f.val, w.sub("routing_strategy")); ok {
			switch s {
			case StrategySimpleShuffle, StrategyLeastBusy, StrategyLatency:
				r.RoutingStrategy = s
			default:
				p.errorf(f.val, w.sub("routing_strategy"), "%q is not supported; use one of %s, %s, %s",
					s, StrategySimpleShuffle, StrategyLeastBusy, StrategyLatency)
			}
		}
	}
	if f, ok := fs["num_retries"]; ok {
		if v, ok := p.count(f.val, w.sub("num_retries"), 100); ok {
			r.NumRetries = int(v)
		}
	}
	if f, ok := fs["allowed_fails"]; ok {
		if v, ok := p.count(f.val, w.sub("allowed_fails"), 1_000_000); ok {
			r.AllowedFails = int(v)
		}
	}
	if f, ok := fs["timeout"]; ok {
		r.Timeout, _ = p.duration(f.val, w.sub("timeout"), false)
	}
	if f, ok := fs["stream_timeout"]; ok {
		r.StreamTimeout, _ = p.duration(f.val, w.sub("stream_timeout"), false)
	}
	if f, ok := fs["first_token_timeout"]; ok {
		r.FirstTokenTimeout, _ = p.duration(f.val, w.sub("first_token_timeout"), false)
	}
	if f, ok := fs["cooldown_time"]; ok {
		if d, ok := p.duration(f.val, w.sub("cooldown_time"), true); ok {
			r.CooldownTime = d
		}
	}
	if f, ok := fs["fallbacks"]; ok {
		p.fallbacks(c, f.val, w.sub("fallbacks"))
	}
	if f, ok := fs["session_affinity"]; ok && !isNull(deref(f.val)) {
		if s, ok := p.scalar(f.val, w.sub("session_affinity")); ok {
			switch strings.ToLower(s) {
			case "true", "on", "yes":
				r.SessionAffinity = true
			case "false", "off", "no":
				r.SessionAffinity = false
			default:
				p.errorf(f.val, w.sub("session_affinity"), "%q is not a choice: true (a session stays on one deployment while it is healthy, the default) or false", s)
			}
		}
	}
}

func (p *parser) fallbacks(c *Config, n *yaml.Node, w where) {
	n = deref(n)
	if isNull(n) {
		return
	}
	const shape = "must be a list of one-key maps, e.g. - claude: [local, coder]"
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, w, shape)
		return
	}
	for i, item := range n.Content {
		iw := w.idx(i)
		item = deref(item)
		if item.Kind != yaml.MappingNode || len(item.Content) != 2 {
			p.errorf(item, iw, shape)
			continue
		}
		k, v := item.Content[0], deref(item.Content[1])
		primary := k.Value
		if k.Kind != yaml.ScalarNode || primary == "" {
			p.errorf(k, iw, shape)
			continue
		}
		iw = iw.sub(primary)
		if p.unknownAlias(primary) {
			p.errorf(k, iw, "%q is not a model_name in model_list; fix the name or add the entry (aliases: %s)", primary, p.aliasList())
		}
		if _, dup := c.fallbacks[primary]; dup {
			p.errorf(k, iw, "fallbacks for %q given twice; merge them into one list", primary)
			continue
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			p.errorf(v, iw, "must be a non-empty list of aliases, e.g. %s: [backup1, backup2]", primary)
			continue
		}
		to := make([]string, 0, len(v.Content))
		for j, t := range v.Content {
			tw := iw.idx(j)
			name, ok := p.scalar(t, tw)
			if !ok {
				continue
			}
			switch {
			case name == primary:
				p.errorf(t, tw, "%q falls back to itself; its other deployments are already tried, remove it", name)
			case p.unknownAlias(name):
				p.errorf(t, tw, "%q is not a model_name in model_list; fix the name or add the entry (aliases: %s)", name, p.aliasList())
			case slices.Contains(to, name):
				p.errorf(t, tw, "%q listed twice; keep one", name)
			default:
				to = append(to, name)
			}
		}
		c.fallbacks[primary] = to
		c.Router.Fallbacks = append(c.Router.Fallbacks, Fallback{Alias: primary, To: to})
	}
}

func (p *parser) modelAliases(c *Config, n *yaml.Node) {
	w := where{field: "model_aliases"}
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, w, "must be a mapping of client model name (or prefix ending in *) to alias, e.g. claude-sonnet-*: claude")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			p.errorf(k, w, "keys must be client model names or prefixes ending in *")
			continue
		}
		key := k.Value
		kw := w.sub(strconv.Quote(key))
		if line, dup := seen[key]; dup {
			p.errorf(k, kw, "given twice (first on line %d); keep one", line)
			continue
		}
		seen[key] = k.Line
		if strings.Contains(strings.TrimSuffix(key, "*"), "*") {
			p.errorf(k, kw, "* is only allowed at the end, as a prefix pattern like claude-sonnet-*")
			continue
		}
		target, ok := p.scalar(v, kw)
		if !ok {
			continue
		}
		if p.unknownAlias(target) {
			p.errorf(v, kw, "%q is not a model_name in model_list; fix the name or add the entry (aliases: %s)", target, p.aliasList())
			continue
		}
		if _, shadowed := c.byAlias[key]; shadowed && key != target {
			p.warnf(k, kw, "is also a model_name, and an exact model_name always wins; this mapping never applies, remove it or rename the entry")
		}
		c.ModelAliases = append(c.ModelAliases, ModelAlias{Pattern: key, Alias: target})
		if prefix, ok := strings.CutSuffix(key, "*"); ok {
			c.patterns = append(c.patterns, ModelAlias{Pattern: prefix, Alias: target})
		} else {
			c.exact[key] = target
		}
	}
	sort.SliceStable(c.patterns, func(i, j int) bool { return len(c.patterns[i].Pattern) > len(c.patterns[j].Pattern) })
}

// suggest proposes the closest known name for a probable typo.
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the optimal-string-alignment distance: Levenshtein with an
// adjacent transposition counted as one edit, the commonest typo.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func knownFieldList(w where, known []string) string {
	list := strings.Join(known, ", ")
	if w == (where{}) {
		list += ", or x-<anything> for YAML anchors"
	}
	return list
}
