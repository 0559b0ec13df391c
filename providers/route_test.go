package providers

import "testing"

// TestNewRouteMatrix pins which client formats reach which upstream
// formats: chat clients through their own translator pairs, the spokes
// (Messages, Responses, Gemini) through the hub, same formats passed
// through, and no route where the hub has none (a Responses upstream for
// anything but native Responses clients).
func TestNewRouteMatrix(t *testing.T) {
	upstreams := []Format{FormatOpenAI, FormatAnthropic, FormatOllama, FormatGemini, FormatResponses}
	served := map[Format][]Format{
		FormatOpenAI:    {FormatOpenAI, FormatAnthropic, FormatOllama, FormatGemini},
		FormatAnthropic: {FormatOpenAI, FormatAnthropic, FormatOllama, FormatGemini},
		FormatResponses: {FormatOpenAI, FormatAnthropic, FormatOllama, FormatGemini, FormatResponses},
		FormatGemini:    {FormatOpenAI, FormatAnthropic, FormatOllama, FormatGemini},
	}
	for client, ok := range served {
		for _, up := range upstreams {
			want := false
			for _, u := range ok {
				want = want || u == up
			}
			r, err := NewRoute(client, up)
			if (err == nil) != want {
				t.Errorf("NewRoute(%s, %s): err %v, want a route: %v", client, up, err, want)
				continue
			}
			if err != nil {
				continue
			}
			if r.Client != client || r.Upstream != up || r.NDJSON != (up == FormatOllama) {
				t.Errorf("NewRoute(%s, %s) = client %s, upstream %s, NDJSON %v", client, up, r.Client, r.Upstream, r.NDJSON)
			}
			if r.request == nil || r.response == nil || r.stream == nil {
				t.Errorf("NewRoute(%s, %s) lacks a translator", client, up)
			}
		}
	}
}
