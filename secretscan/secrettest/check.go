package secrettest

import "strings"

// Pieces are the parts of a credential that must not appear anywhere
// once it is redacted: the value, and each line of a multi-line one
// (a private key's base64 lines), in its raw and its JSON-escaped forms.
func (c Credential) Pieces() []string {
	var out []string
	for _, v := range []string{c.Value, strings.ReplaceAll(c.Value, `\n`, "\n")} {
		for _, line := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\\' }) {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") && !strings.HasPrefix(line, "n-----") {
				out = append(out, line)
			}
		}
	}
	return out
}

// Leaked returns the first piece of any credential found in text, or "".
func Leaked(text string, creds []Credential) string {
	for _, c := range creds {
		for _, p := range c.Pieces() {
			if strings.Contains(text, p) {
				return c.Kind
			}
		}
	}
	return ""
}
