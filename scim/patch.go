package scim

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A SCIM error the client caused, answered 400 with its scimType.
type scimError struct {
	status   int
	scimType string
	detail   string
}

func (e *scimError) Error() string { return e.detail }

func badRequest(scimType, format string, args ...any) *scimError {
	return &scimError{status: 400, scimType: scimType, detail: fmt.Sprintf(format, args...)}
}

// Filter is a parsed `attr eq "value"` filter, the form Okta and Entra ID
// send; attribute names compare case-insensitively (RFC 7644 §3.4.2.2).
type Filter struct {
	Attr  string
	Value string
}

// ParseFilter parses `attr eq "value"`, the only operator the two IdPs
// send for users and groups.
func ParseFilter(s string) (Filter, error) {
	s = strings.TrimSpace(s)
	attr, rest, ok := strings.Cut(s, " ")
	if !ok {
		return Filter{}, badRequest("invalidFilter", "filter %q: want attribute eq \"value\"", s)
	}
	rest = strings.TrimSpace(rest)
	op, val, ok := strings.Cut(rest, " ")
	if !ok || !strings.EqualFold(op, "eq") {
		return Filter{}, badRequest("invalidFilter", "filter %q: only the eq operator is supported", s)
	}
	val = strings.TrimSpace(val)
	var v string
	if err := json.Unmarshal([]byte(val), &v); err != nil {
		return Filter{}, badRequest("invalidFilter", "filter %q: the value must be a quoted string", s)
	}
	return Filter{Attr: attr, Value: v}, nil
}

// Matches reports whether the resource (as a JSON object) has the
// filter's attribute equal to its value. userName, emails and
// displayName compare case-insensitively (caseExact false in RFC 7643);
// id and externalId exactly.
func (f Filter) Matches(doc map[string]any) bool {
	attr, sub, _ := strings.Cut(f.Attr, ".")
	v, ok := get(doc, attr)
	if !ok {
		return false
	}
	exact := strings.EqualFold(attr, "id") || strings.EqualFold(attr, "externalId")
	eq := func(x any) bool {
		s, ok := x.(string)
		if !ok {
			return false
		}
		if exact {
			return s == f.Value
		}
		return strings.EqualFold(s, f.Value)
	}
	if sub == "" {
		return eq(v)
	}
	switch t := v.(type) {
	case map[string]any:
		sv, _ := get(t, sub)
		return eq(sv)
	case []any:
		for _, e := range t {
			if m, ok := e.(map[string]any); ok {
				if sv, _ := get(m, sub); eq(sv) {
					return true
				}
			}
		}
	}
	return false
}

// get finds an attribute by name, case-insensitively.
func get(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// set stores an attribute, replacing one of the same name in any case.
func set(m map[string]any, name string, v any) {
	for k := range m {
		if strings.EqualFold(k, name) && k != name {
			delete(m, k)
		}
	}
	m[name] = v
}

func del(m map[string]any, name string) {
	for k := range m {
		if strings.EqualFold(k, name) {
			delete(m, k)
		}
	}
}

// Operation is one PATCH operation (RFC 7644 §3.5.2). Op is compared
// case-insensitively: Entra ID sends "Replace" and "Add".
type Operation struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

// PatchRequest is a PATCH body.
type PatchRequest struct {
	Schemas    []string    `json:"schemas"`
	Operations []Operation `json:"Operations"`
}

// path is a parsed PATCH path: attr, attr.sub, attr[filter] or
// attr[filter].sub.
type path struct {
	attr, sub string
	filter    *Filter
}

func parsePath(p string) (path, error) {
	// A path may carry the schema URN of its attribute; drop it.
	for _, urn := range []string{UserSchema + ":", GroupSchema + ":"} {
		if len(p) > len(urn) && strings.EqualFold(p[:len(urn)], urn) {
			p = p[len(urn):]
		}
	}
	var out path
	if i := strings.IndexByte(p, '['); i >= 0 {
		j := strings.LastIndexByte(p, ']')
		if j < i {
			return out, badRequest("invalidPath", "path %q: unclosed [", p)
		}
		f, err := ParseFilter(p[i+1 : j])
		if err != nil {
			return out, badRequest("invalidPath", "path %q: %v", p, err)
		}
		out.filter = &f
		out.attr = p[:i]
		out.sub = strings.TrimPrefix(p[j+1:], ".")
		return out, nil
	}
	out.attr, out.sub, _ = strings.Cut(p, ".")
	if out.attr == "" {
		return out, badRequest("invalidPath", "path %q is empty", p)
	}
	return out, nil
}

// Apply applies ops to doc, a resource as a JSON object. multi names the
// multi-valued attributes (emails, members), to which add appends.
func Apply(doc map[string]any, ops []Operation, multi map[string]bool) error {
	for i, op := range ops {
		kind := strings.ToLower(op.Op)
		var v any
		if len(op.Value) > 0 {
			if err := json.Unmarshal(op.Value, &v); err != nil {
				return badRequest("invalidValue", "Operations[%d].value: %v", i, err)
			}
		}
		switch kind {
		case "add", "replace":
			if op.Path == "" {
				obj, ok := v.(map[string]any)
				if !ok {
					return badRequest("invalidValue", "Operations[%d]: without a path, value must be an object of attributes", i)
				}
				for k, val := range obj {
					p, err := parsePath(k)
					if err != nil {
						return err
					}
					if err := apply(doc, kind, p, val, multi); err != nil {
						return err
					}
				}
				continue
			}
			p, err := parsePath(op.Path)
			if err != nil {
				return err
			}
			if err := apply(doc, kind, p, v, multi); err != nil {
				return err
			}
		case "remove":
			if op.Path == "" {
				return badRequest("noTarget", "Operations[%d]: remove needs a path", i)
			}
			p, err := parsePath(op.Path)
			if err != nil {
				return err
			}
			remove(doc, p, v)
		default:
			return badRequest("invalidSyntax", "Operations[%d].op %q: must be add, replace or remove", i, op.Op)
		}
	}
	return nil
}

func isMulti(multi map[string]bool, attr string) bool {
	for k := range multi {
		if strings.EqualFold(k, attr) {
			return true
		}
	}
	return false
}

func apply(doc map[string]any, kind string, p path, v any, multi map[string]bool) error {
	if p.filter != nil {
		// attr[filter].sub: set sub on the matching elements, or add one
		// element carrying the filter's value and sub when none matches.
		cur, _ := get(doc, p.attr)
		list, _ := cur.([]any)
		found := false
		for _, e := range list {
			m, ok := e.(map[string]any)
			if !ok || !p.filter.Matches(m) {
				continue
			}
			found = true
			if p.sub == "" {
				if obj, ok := v.(map[string]any); ok {
					for k, val := range obj {
						set(m, k, val)
					}
				}
			} else {
				set(m, p.sub, v)
			}
		}
		if !found {
			m := map[string]any{p.filter.Attr: p.filter.Value}
			if p.sub != "" {
				m[p.sub] = v
			} else if obj, ok := v.(map[string]any); ok {
				for k, val := range obj {
					m[k] = val
				}
			}
			list = append(list, m)
		}
		set(doc, p.attr, list)
		return nil
	}
	if p.sub != "" {
		cur, _ := get(doc, p.attr)
		m, ok := cur.(map[string]any)
		if !ok {
			m = map[string]any{}
		}
		set(m, p.sub, v)
		set(doc, p.attr, m)
		return nil
	}
	if isMulti(multi, p.attr) {
		add, ok := v.([]any)
		if !ok {
			add = []any{v}
		}
		cur, _ := get(doc, p.attr)
		list, _ := cur.([]any)
		if kind == "replace" {
			list = nil
		}
		for _, e := range add {
			if !containsValue(list, e) {
				list = append(list, e)
			}
		}
		set(doc, p.attr, list)
		return nil
	}
	if obj, ok := v.(map[string]any); ok && kind == "add" {
		// add merges into a complex attribute (RFC 7644 §3.5.2.1).
		cur, _ := get(doc, p.attr)
		if m, ok := cur.(map[string]any); ok {
			for k, val := range obj {
				set(m, k, val)
			}
			return nil
		}
	}
	set(doc, p.attr, v)
	return nil
}

// containsValue reports whether list has an element with e's "value".
func containsValue(list []any, e any) bool {
	em, ok := e.(map[string]any)
	if !ok {
		return false
	}
	ev, _ := get(em, "value")
	for _, x := range list {
		if xm, ok := x.(map[string]any); ok {
			if xv, _ := get(xm, "value"); xv == ev && ev != nil {
				return true
			}
		}
	}
	return false
}

func remove(doc map[string]any, p path, v any) {
	cur, _ := get(doc, p.attr)
	if p.filter == nil && p.sub != "" {
		if m, ok := cur.(map[string]any); ok {
			del(m, p.sub)
		}
		return
	}
	list, isList := cur.([]any)
	if !isList {
		del(doc, p.attr)
		return
	}
	// Entra ID removes members by value list on the bare path.
	var values []any
	if p.filter == nil {
		if vs, ok := v.([]any); ok {
			values = vs
		} else if v == nil {
			del(doc, p.attr)
			return
		}
	}
	var keep []any
	for _, e := range list {
		m, _ := e.(map[string]any)
		match := false
		if p.filter != nil {
			match = m != nil && p.filter.Matches(m)
		} else {
			match = containsValue(values, e)
		}
		if match && p.filter != nil && p.sub != "" {
			del(m, p.sub)
			match = false
		}
		if !match {
			keep = append(keep, e)
		}
	}
	set(doc, p.attr, keep)
}
