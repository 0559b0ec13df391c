package agenthook_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/agenthook"
	"github.com/modelgate/modelgate/internal/testbin"
)

const ourCmd = "/opt/modelgate/caddy agent-hook"

func writeFixture(t *testing.T, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), ".claude", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // the umask may have narrowed it
		t.Fatal(err)
	}
	return path
}

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	return m
}

// handlers returns the commands registered for event, group by group.
func handlers(t *testing.T, settings map[string]any, event string) [][]string {
	t.Helper()
	hooks, _ := settings["hooks"].(map[string]any)
	groups, _ := hooks[event].([]any)
	var out [][]string
	for _, g := range groups {
		var cmds []string
		for _, h := range g.(map[string]any)["hooks"].([]any) {
			cmds = append(cmds, h.(map[string]any)["command"].(string))
		}
		out = append(out, cmds)
	}
	return out
}

func TestInstallMergesAndIsIdempotent(t *testing.T) {
	fixture, err := os.ReadFile("testdata/settings-existing.json")
	if err != nil {
		t.Fatal(err)
	}
	path := writeFixture(t, "settings.json", fixture, 0o640)

	changed, err := agenthook.Install(path, []string{"Stop", "Notification"}, ourCmd)
	if err != nil || !changed {
		t.Fatalf("Install = %v, %v; want changed", changed, err)
	}
	after, _ := os.ReadFile(path)
	got, want := decode(t, after), decode(t, fixture)

	// Everything but hooks.Stop and hooks.Notification is exactly as before.
	for _, k := range []string{"model", "permissions", "env", "statusLine"} {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s changed: %v -> %v", k, want[k], got[k])
		}
	}
	if !reflect.DeepEqual(got["hooks"].(map[string]any)["PreToolUse"], want["hooks"].(map[string]any)["PreToolUse"]) {
		t.Error("hooks.PreToolUse changed")
	}
	if h := handlers(t, got, "Stop"); !reflect.DeepEqual(h, [][]string{{"say done"}, {ourCmd}}) {
		t.Errorf("Stop handlers %v", h)
	}
	if h := handlers(t, got, "Notification"); !reflect.DeepEqual(h, [][]string{{ourCmd}}) {
		t.Errorf("Notification handlers %v", h)
	}
	stop := got["hooks"].(map[string]any)["Stop"].([]any)[1].(map[string]any)
	if stop["matcher"] != "*" || stop["hooks"].([]any)[0].(map[string]any)["type"] != "command" {
		t.Errorf("registration %v: want matcher * and type command", stop)
	}
	// Key order and number spelling survive: the file is edited, not rebuilt.
	if !bytes.Contains(after, []byte(`"MAX_TOKENS": 1.50`)) {
		t.Errorf("number reformatted:\n%s", after)
	}
	if i, j := bytes.Index(after, []byte(`"model"`)), bytes.Index(after, []byte(`"statusLine"`)); i < 0 || j < i {
		t.Errorf("key order changed:\n%s", after)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", fi.Mode().Perm())
	}

	changed, err = agenthook.Install(path, []string{"Stop", "Notification"}, ourCmd)
	again, _ := os.ReadFile(path)
	if err != nil || changed || !bytes.Equal(again, after) {
		t.Errorf("second Install = %v, %v and file changed %v; want no change", changed, err, !bytes.Equal(again, after))
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the settings file (temp file left?)", len(entries))
	}

	// Uninstall restores the original content.
	changed, err = agenthook.Uninstall(path, nil)
	if err != nil || !changed {
		t.Fatalf("Uninstall = %v, %v", changed, err)
	}
	restored, _ := os.ReadFile(path)
	if !reflect.DeepEqual(decode(t, restored), want) {
		t.Errorf("after uninstall:\n%s\nwant the fixture's content", restored)
	}
	if changed, err := agenthook.Uninstall(path, nil); err != nil || changed {
		t.Errorf("second Uninstall = %v, %v; want no change", changed, err)
	}
}

func TestInstallNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "proj", ".claude", "settings.local.json")
	changed, err := agenthook.Install(path, nil, ourCmd)
	if err != nil || !changed {
		t.Fatalf("Install = %v, %v", changed, err)
	}
	data, _ := os.ReadFile(path)
	want := `{
  "hooks": {
    "Stop": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/opt/modelgate/caddy agent-hook",
            "timeout": 10
          }
        ]
      }
    ],
    "Notification": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/opt/modelgate/caddy agent-hook",
            "timeout": 10
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/opt/modelgate/caddy agent-hook",
            "timeout": 10
          }
        ]
      }
    ],
    "UserPromptSubmit": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/opt/modelgate/caddy agent-hook",
            "timeout": 10
          }
        ]
      }
    ]
  }
}
`
	if string(data) != want {
		t.Errorf("new file:\n%s\nwant:\n%s", data, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want 0600", fi.Mode().Perm())
	}
	if changed, err := agenthook.Uninstall(path, nil); err != nil || !changed {
		t.Fatalf("Uninstall = %v, %v", changed, err)
	}
	if data, _ := os.ReadFile(path); strings.TrimSpace(string(data)) != "{}" {
		t.Errorf("after uninstall %q, want {}", data)
	}
}

func TestInstallUpdatesMovedBinaryInPlace(t *testing.T) {
	path := writeFixture(t, "settings.json", []byte(`{"hooks":{"Stop":[{"matcher":"*","hooks":[
		{"type":"command","command":"'/old place/caddy' agent-hook","timeout":10},
		{"type":"command","command":"caddy agent-hook --agent Codex"}]}]}}`), 0o600)
	if changed, err := agenthook.Install(path, []string{"Stop"}, ourCmd); err != nil || !changed {
		t.Fatalf("Install = %v, %v", changed, err)
	}
	data, _ := os.ReadFile(path)
	// The old registration is rewritten where it was; the user's own
	// variant with extra flags is not ours and stays.
	if h := handlers(t, decode(t, data), "Stop"); !reflect.DeepEqual(h, [][]string{{ourCmd, "caddy agent-hook --agent Codex"}}) {
		t.Errorf("Stop handlers %v", h)
	}
	if changed, err := agenthook.Uninstall(path, []string{"Stop"}); err != nil || !changed {
		t.Fatalf("Uninstall = %v, %v", changed, err)
	}
	data, _ = os.ReadFile(path)
	if h := handlers(t, decode(t, data), "Stop"); !reflect.DeepEqual(h, [][]string{{"caddy agent-hook --agent Codex"}}) {
		t.Errorf("after uninstall Stop handlers %v", h)
	}
}

func TestInstallRefusesMalformed(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"not json", `{"hooks": {`},
		{"comments", "{\n// mine\n\"model\": \"x\"}"},
		{"array", `[]`},
		{"hooks not object", `{"hooks": ["Stop"]}`},
		{"event not array", `{"hooks": {"Stop": {"command": "x"}}}`},
		{"trailing data", `{"a":1} {"b":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFixture(t, "settings.json", []byte(tc.content), 0o644)
			changed, err := agenthook.Install(path, []string{"Stop"}, ourCmd)
			if err == nil || changed {
				t.Errorf("Install = %v, %v; want an error", changed, err)
			}
			if data, _ := os.ReadFile(path); string(data) != tc.content {
				t.Errorf("file changed to %q", data)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("%d entries in the directory, want 1", len(entries))
			}
		})
	}
}

func TestInstallThroughSymlink(t *testing.T) {
	real := writeFixture(t, "real.json", []byte(`{"model":"opus"}`), 0o644)
	link := filepath.Join(filepath.Dir(real), "settings.json")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	if _, err := agenthook.Install(link, []string{"Stop"}, ourCmd); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("settings.json is no longer a symlink")
	}
	data, _ := os.ReadFile(real)
	if m := decode(t, data); m["model"] != "opus" || len(handlers(t, m, "Stop")) != 1 {
		t.Errorf("target content %s", data)
	}
}

func TestUninstallMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	if changed, err := agenthook.Uninstall(path, nil); err != nil || changed {
		t.Errorf("Uninstall = %v, %v; want no change, no error", changed, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Uninstall created %s", path)
	}
}

func TestSettingsPath(t *testing.T) {
	tests := []struct {
		global           bool
		project, cfg     string
		want, wantErrSub string
	}{
		{global: true, want: "/home/u/.claude/settings.json"},
		{global: true, cfg: ".qwen", want: "/home/u/.qwen/settings.json"},
		{project: "/w/shop", want: "/w/shop/.claude/settings.local.json"},
		{project: "/w/shop", cfg: "/etc/agent", want: "/etc/agent/settings.local.json"},
		{global: true, project: "/w", wantErrSub: "not both"},
		{wantErrSub: "--global or --project"},
	}
	for _, tc := range tests {
		got, err := agenthook.SettingsPath(tc.global, tc.project, tc.cfg, "/home/u")
		if got != tc.want || (err == nil) != (tc.wantErrSub == "") || err != nil && !strings.Contains(err.Error(), tc.wantErrSub) {
			t.Errorf("SettingsPath(%v, %q, %q) = %q, %v; want %q, error containing %q",
				tc.global, tc.project, tc.cfg, got, err, tc.want, tc.wantErrSub)
		}
	}
}

// TestInstallCommand runs the real install and uninstall subcommands.
func TestInstallCommand(t *testing.T) {
	bin := testbin.Path(t)
	home, project := t.TempDir(), t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"agent-hook"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	wantCmd := agenthook.HookCommand(bin)

	if out, err := run("install", "--global", "--events", "Stop"); err != nil {
		t.Fatalf("install --global: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(home, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, data)
	if h := handlers(t, m, "Stop"); !reflect.DeepEqual(h, [][]string{{wantCmd}}) || m["hooks"].(map[string]any)["Notification"] != nil {
		t.Errorf("global settings %s: want only Stop -> %q", data, wantCmd)
	}

	if out, err := run("install", "--project", project); err != nil {
		t.Fatalf("install --project: %v\n%s", err, out)
	}
	local := filepath.Join(project, ".claude", "settings.local.json")
	first, _ := os.ReadFile(local)
	if out, err := run("install", "--project", project); err != nil || !strings.Contains(out, "already up to date") {
		t.Errorf("second install: %v\n%s", err, out)
	}
	if second, _ := os.ReadFile(local); !bytes.Equal(first, second) {
		t.Error("second install changed the file")
	}
	m = decode(t, first)
	for _, ev := range []string{"Stop", "Notification", "SessionStart", "UserPromptSubmit"} {
		if h := handlers(t, m, ev); !reflect.DeepEqual(h, [][]string{{wantCmd}}) {
			t.Errorf("%s handlers %v, want [[%s]]", ev, h, wantCmd)
		}
	}

	if out, err := run("uninstall", "--project", project); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	if data, _ := os.ReadFile(local); strings.TrimSpace(string(data)) != "{}" {
		t.Errorf("after uninstall: %s", data)
	}

	if err := os.WriteFile(local, []byte("{oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run("install", "--project", project); err == nil {
		t.Errorf("install on a malformed file succeeded:\n%s", out)
	}
	if data, _ := os.ReadFile(local); string(data) != "{oops" {
		t.Errorf("malformed file changed to %q", data)
	}
	if out, err := run("install"); err == nil {
		t.Errorf("install without --global or --project succeeded:\n%s", out)
	}
}
