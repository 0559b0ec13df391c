package upstreamauth

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"strings"
	"unicode/utf8"
)

// pageTemplate is every page under Path: a title, a sentence, and the
// person's servers when listing them (an admin's also the shared keys'
// grants), or the confirmation of a connect. Every button posts with the
// session's CSRF token, which /v1/me answers.
var pageTemplate = template.Must(template.New("p").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}td{padding:.3em 1em .3em 0}</style></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p>
{{with .More}}{{with .Confirm}}<table><tr><td>MCP server</td><td>{{.Server}}</td></tr><tr><td>URL</td><td>{{.URL}}</td></tr>
<tr><td>Authorization server</td><td>{{if .Issuer}}{{.Issuer}}{{else}}the one {{.URL}} names{{end}}</td></tr>
<tr><td>For</td><td>{{if .SharedKey}}the shared key {{.SharedKey}}: every holder of it will act as your account{{else}}you{{end}}</td></tr></table>
<p><button id="connect" data-link="{{.Link}}" data-start="{{.StartPath}}">{{if .SharedKey}}Connect my account for key {{.SharedKey}}{{else}}Connect my account{{end}}</button></p>{{end}}
{{if .Conns}}<table>{{range .Conns}}<tr><td>{{.Server}}</td><td>{{if .Connected}}connected{{else}}not connected{{end}}</td>
<td><a href="{{.ConnectURL}}">{{if .Connected}}connect again{{else}}connect{{end}}</a></td>
<td>{{if .Connected}}<button data-server="{{.Server}}">disconnect</button>{{end}}</td></tr>{{end}}</table>{{end}}
{{if .Keys}}<h2>Shared keys' grants</h2><p>Each acts at its server as the admin who connected it, for every holder of the key.</p>
<table>{{range .Keys}}<tr><td>{{.Server}}</td><td>key {{.Key}}</td><td>since {{.ConnectedAt.Format "2006-01-02 15:04"}}</td>
<td><button data-server="{{.Server}}" data-unit="{{.Unit}}">revoke</button></td></tr>{{end}}</table>{{end}}
<script nonce="{{$.Nonce}}">
async function csrf() { return (await (await fetch("/v1/me")).json()).csrf_token; }
document.querySelectorAll("button[data-server]").forEach(function (b) {
  b.addEventListener("click", async function () {
    const body = b.dataset.unit ? JSON.stringify({unit: b.dataset.unit}) : "";
    const r = await fetch("disconnect/" + encodeURIComponent(b.dataset.server), {method: "POST", headers: {"X-CSRF-Token": await csrf(), "Content-Type": "application/json"}, body: body});
    if (r.ok) { location.reload(); } else { alert(((await r.json()).error || {}).message || r.status); }
  });
});
const c = document.getElementById("connect");
if (c) {
  c.addEventListener("click", async function () {
    const r = await fetch(c.dataset.start, {method: "POST", headers: {"X-CSRF-Token": await csrf(), "Content-Type": "application/json"}, body: JSON.stringify({link: c.dataset.link})});
    const out = await r.json();
    if (r.ok) { location.assign(out.redirect); } else { alert((out.error || {}).message || r.status); }
  });
}
</script>{{end}}
</body></html>`))

// pageMore is what a page shows beyond its sentence.
type pageMore struct {
	Conns   []Connection
	Keys    []KeyGrant
	Confirm *confirmation
}

func (b *Broker) page(w http.ResponseWriter, status int, title, text string, more *pageMore) {
	var n [12]byte
	_, _ = rand.Read(n[:])
	nonce := base64.StdEncoding.EncodeToString(n[:])
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-"+nonce+"'; connect-src 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, map[string]any{"Title": title, "Text": text, "More": more, "Nonce": nonce})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is an error in the shape the dashboard reads.
func apiError(msg string) map[string]any {
	return map[string]any{"error": map[string]string{"message": msg}}
}

// bounded is text from elsewhere cut to 64 bytes on a rune boundary.
func bounded(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// errorCode is an OAuth error code from an authorization server as it
// may be shown: only the characters RFC 6749 allows in one (%x20-21,
// %x23-5B, %x5D-7E), at most 64 bytes, so the server cannot put prose
// (or instructions to an agent's model) into what the gateway says.
func errorCode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 64; i++ {
		if c := s[i]; c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return "an error"
	}
	return b.String()
}

// discoveryText is a discovery failure as a person is shown it: metadata
// quoted from whatever URL a server named is cut to a bound and stripped
// of control characters.
func discoveryText(err error) string {
	const limit = 400
	s := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, err.Error())
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
