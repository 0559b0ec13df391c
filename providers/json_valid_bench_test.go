package providers

import (
	"encoding/json"
	"testing"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// BenchmarkValidJSON compares jsonfast.Valid with json.Valid on the
// chunks of a chat stream, what the pass-through checks.
func BenchmarkValidJSON(b *testing.B) {
	evs := streamEvents(openAIUpstream)
	for _, v := range []struct {
		name string
		fn   func([]byte) bool
	}{{"scanner", jsonfast.Valid}, {"encoding_json", json.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				for _, ev := range evs {
					v.fn(ev.Data)
				}
			}
		})
	}
}
