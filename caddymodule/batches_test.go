package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"go.uber.org/zap"
)

// TestBatchesOption: the batches block's options reach the batch
// service; a bad value is an error naming the option and the fix.
func TestBatchesOption(t *testing.T) {
	v, err := parseAppOption(caddyfile.NewTestDispenser("modelgate {\nbatches {\nretention 7d\nworkers 4\nmax_bytes 10MB\nmax_items 1000\n}\n}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(v.(httpcaddyfile.App).Value), `{"batches":{"retention":604800000000000,"workers":4,"max_bytes":10000000,"max_items":1000}}`; got != want {
		t.Fatalf("JSON %s, want %s", got, want)
	}
	a := &App{Batches: &BatchConfig{Retention: 604800000000000, Workers: 4, MaxBytes: 10000000, MaxItems: 1000}}
	o := a.batchOptions(zap.NewNop())
	if o.Retention != 7*24*time.Hour || o.Workers != 4 || o.MaxBytes != 10000000 || o.MaxItems != 1000 || o.Failed == nil {
		t.Errorf("options %+v", o)
	}
	for input, want := range map[string]string{
		"batches {\nretention 5m\n}":   "batches retention",
		"batches {\nworkers 0\n}":      "batches workers",
		"batches {\nmax_bytes lots\n}": "batches max_bytes",
		"batches {\nmax_items -1\n}":   "batches max_items",
		"batches {\nspeed fast\n}":     "unknown option",
		"batches {\nworkers\n}":        "want one value",
		"batches\nbatches":             "already specified",
	} {
		_, err := parseAppOption(caddyfile.NewTestDispenser("modelgate {\n"+input+"\n}"), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %q", input, err, want)
		}
	}
}
