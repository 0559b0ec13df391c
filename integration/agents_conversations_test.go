package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
)

// TestAgentsSDKConversationsSession runs the OpenAI Agents SDK's
// OpenAIConversationsSession through the gateway: two agent turns keep
// their history in a gateway conversation, and the session reads, pops and
// clears it.
func TestAgentsSDKConversationsSession(t *testing.T) {
	dir, node := testbin.OpenAIAgents(t)
	script, err := os.ReadFile(filepath.Join("testdata", "agents_conversations.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "modelgate-agents-conversations-test.mjs")
	if err := os.WriteFile(run, script, 0o600); err != nil {
		t.Fatal(err)
	}
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, run)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"MODELGATE_BASE=" + g.base, "MODELGATE_API_KEY=" + aliceKey, "MODELGATE_MODEL=claude"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var res struct {
		ConversationID string   `json:"conversationId"`
		First          string   `json:"first"`
		Second         string   `json:"second"`
		Items          []string `json:"items"`
		Popped         *string  `json:"popped"`
		AfterPop       int      `json:"afterPop"`
		GoneStatus     int      `json:"goneStatus"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		t.Fatalf("script output: %v: %s", err, stdout.String())
	}
	if !strings.HasPrefix(res.ConversationID, "conv_") || res.First != fakes.DefaultReply {
		t.Errorf("session: %+v", res)
	}
	// The second turn's upstream request carried the first turn.
	if body := string(u.anthropicRec.Last().Body); !strings.Contains(body, "heron") || !strings.Contains(body, "What was the code word?") {
		t.Errorf("second turn lacked the session's history: %s", body)
	}
	want := []string{"Remember: the code word is heron.", fakes.DefaultReply, "What was the code word?", fakes.DefaultReply}
	if strings.Join(res.Items, "|") != strings.Join(want, "|") {
		t.Errorf("session items %q, want %q", res.Items, want)
	}
	if res.Popped == nil || *res.Popped != fakes.DefaultReply || res.AfterPop != 3 {
		t.Errorf("popItem: %+v", res)
	}
	if res.GoneStatus != 404 {
		t.Errorf("cleared session's conversation answered %d, want 404", res.GoneStatus)
	}
}
