package integration

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
)

// TestNodeSDKBackgroundStream: the openai Node SDK's
// responses.create({background: true, stream: true}) iterates the run's
// events, response.created (with the id) first and response.completed
// last, where it used to iterate none and raise nothing; a
// retrieve-stream with starting_after resumes after that event
// (testdata/node_background_stream.mjs).
func TestNodeSDKBackgroundStream(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	stdout := runNodeScript(t, "node_background_stream.mjs", "MODELGATE_BASE="+g.base, "MODELGATE_API_KEY="+aliceKey, "MODELGATE_MODEL=oa")
	var res struct {
		Types   []string
		ID      string
		Resumed []int
	}
	if err := json.Unmarshal(stdout, &res); err != nil {
		t.Fatalf("script output: %v: %s", err, stdout)
	}
	if len(res.Types) < 3 || res.Types[0] != "response.created" || res.Types[len(res.Types)-1] != "response.completed" ||
		!strings.HasPrefix(res.ID, "resp_") || !slices.Contains(res.Types, "response.output_text.delta") {
		t.Errorf("the create stream: id %q, events %v", res.ID, res.Types)
	}
	if len(res.Resumed) == 0 || res.Resumed[0] != 2 {
		t.Errorf("resumed after event 1 with sequence numbers %v, want from 2", res.Resumed)
	}
}

// runNodeScript runs testdata/name with node beside the Node SDKs that
// scripts/node-sdks.sh installs, with env added to a bare PATH and HOME,
// and returns its trimmed stdout; a failed run fails the test.
func runNodeScript(t *testing.T, name string, env ...string) []byte {
	t.Helper()
	dir, node := testbin.NodeSDKs(t)
	return runNode(t, dir, node, installScript(t, dir, name), env...)
}
