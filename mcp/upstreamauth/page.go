package upstreamauth

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"unicode/utf8"
)

// pageTemplate is every page under Path: a title, a sentence, and the
// person's servers when listing them. Disconnect posts with the session's
// CSRF token, which /v1/me answers.
var pageTemplate = template.Must(template.New("p").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}td{padding:.3em 1em .3em 0}</style></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p>
{{if .Conns}}<table>{{range .Conns}}<tr><td>{{.Server}}</td><td>{{if .Connected}}connected{{else}}not connected{{end}}</td>
<td><a href="{{.ConnectURL}}">{{if .Connected}}connect again{{else}}connect{{end}}</a></td>
<td>{{if .Connected}}<button data-server="{{.Server}}">disconnect</button>{{end}}</td></tr>{{end}}</table>
<script nonce="{{.Nonce}}">
document.querySelectorAll("button[data-server]").forEach(function (b) {
  b.addEventListener("click", async function () {
    const me = await (await fetch("/v1/me")).json();
    const r = await fetch("disconnect/" + encodeURIComponent(b.dataset.server), {method: "POST", headers: {"X-CSRF-Token": me.csrf_token}});
    if (r.ok) { location.reload(); } else { alert(((await r.json()).error || {}).message || r.status); }
  });
});
</script>{{end}}
</body></html>`))

func (b *Broker) page(w http.ResponseWriter, status int, title, text string, conns []Connection) {
	var n [12]byte
	_, _ = rand.Read(n[:])
	nonce := base64.StdEncoding.EncodeToString(n[:])
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-"+nonce+"'; connect-src 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, map[string]any{"Title": title, "Text": text, "Conns": conns, "Nonce": nonce})
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
