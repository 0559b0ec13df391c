// Package testbin gives tests the path of a built ./cmd/caddy binary. The
// test command builds it once and exports MODELGATE_TEST_BINARY; a test run
// without it builds its own copy once per test process.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/testlane"
)

var (
	once     sync.Once
	built    string
	builtDir string
	buildErr error
)

// Main runs a package's tests and then removes the binary Path built for
// them, if it built one: each test process builds its own copy (about
// 120 MB), which would otherwise stay in the temporary directory after
// every run. A package whose tests call Path calls Main from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// Path returns the binary's path, building it if needed; it fails the test
// when the build fails.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MODELGATE_TEST_BINARY"); p != "" {
		return p
	}
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "modelgate-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtDir, built = dir, filepath.Join(dir, "caddy")
		cmd := exec.Command("go", "build", "-o", built, "./cmd/caddy")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildFailure{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("building ./cmd/caddy: %v", buildErr)
	}
	return built
}

type buildFailure struct {
	out string
	err error
}

func (b *buildFailure) Error() string { return b.err.Error() + "\n" + b.out }

// ClaudeCode returns the path of the Claude Code CLI for end-to-end tests:
// $MODELGATE_CLAUDE_BIN, then the copy scripts/claude-code.sh keeps under
// .cache, then installing it with that script when npm is present. It
// skips the test, saying why, only when none of these can work.
func ClaudeCode(t testing.TB) string {
	t.Helper()
	testlane.FullOnly(t, "the real Claude Code CLI (npm)")
	if p := os.Getenv("MODELGATE_CLAUDE_BIN"); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cached := filepath.Join(root, ".cache", "claude-code", "node_modules", ".bin", "claude")
	if _, err := os.Stat(cached); err == nil {
		return cached
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("Claude Code end-to-end test skipped: $MODELGATE_CLAUDE_BIN is unset, .cache/claude-code has no claude and npm is not installed to fetch it")
	}
	out, err := exec.Command("sh", filepath.Join(root, "scripts", "claude-code.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/claude-code.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// Codex returns the path of the Codex CLI for end-to-end tests:
// $MODELGATE_CODEX_BIN, else what scripts/codex.sh installs.
func Codex(t testing.TB) string {
	return npmTool(t, "Codex", "MODELGATE_CODEX_BIN", "codex-*", "codex", "codex.sh")
}

// GeminiCLI returns the path of Gemini CLI for end-to-end tests:
// $MODELGATE_GEMINI_CLI_BIN, else what scripts/gemini-cli.sh installs.
func GeminiCLI(t testing.TB) string {
	return npmTool(t, "Gemini CLI", "MODELGATE_GEMINI_CLI_BIN", "gemini-*", "gemini", "gemini-cli.sh")
}

// Opencode returns the path of opencode for end-to-end tests:
// $MODELGATE_OPENCODE_BIN, else what scripts/opencode.sh installs.
func Opencode(t testing.TB) string {
	return npmTool(t, "opencode", "MODELGATE_OPENCODE_BIN", "opencode-*", "opencode", "opencode.sh")
}

// QwenCode returns the path of Qwen Code for end-to-end tests:
// $MODELGATE_QWEN_BIN, else what scripts/qwen-code.sh installs.
func QwenCode(t testing.TB) string {
	return npmTool(t, "Qwen Code", "MODELGATE_QWEN_BIN", "qwen-*", "qwen", "qwen-code.sh")
}

// npmTool finds an npm-installed client the way ClaudeCode finds Claude
// Code: the environment variable, else installing it with its script
// (which returns at once when .cache has it), else, without npm, a copy
// already under .cache; with none of these the test is skipped.
func npmTool(t testing.TB, name, envVar, cacheGlob, bin, script string) string {
	t.Helper()
	testlane.FullOnly(t, "the real "+name+" CLI (npm)")
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := exec.LookPath("npm"); err != nil {
		if matches, _ := filepath.Glob(filepath.Join(root, ".cache", cacheGlob, "node_modules", ".bin", bin)); len(matches) > 0 {
			return matches[len(matches)-1]
		}
		t.Skipf("%s end-to-end test skipped: $%s is unset, .cache has no %s and npm is not installed to fetch it", name, envVar, bin)
	}
	out, err := exec.Command("sh", filepath.Join(root, "scripts", script)).Output()
	if err != nil {
		t.Fatalf("scripts/%s: %v", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// NodeSDKs returns a directory holding the official Node SDKs' node_modules
// ($MODELGATE_NODE_SDKS_DIR, else what scripts/node-sdks.sh installs), and
// the node binary to run scripts there with.
func NodeSDKs(t testing.TB) (dir, node string) {
	t.Helper()
	testlane.FullOnly(t, "the official Node SDKs (npm)")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("Node SDK end-to-end test skipped: node is not installed")
	}
	if p := os.Getenv("MODELGATE_NODE_SDKS_DIR"); p != "" {
		return p, node
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	out, err := exec.Command("sh", filepath.Join(root, "scripts", "node-sdks.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/node-sdks.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], node
}

// AISDK returns a directory holding the Vercel AI SDK's node_modules
// ($MODELGATE_AISDK_DIR, else what scripts/ai-sdk.sh installs), and the
// node binary to run scripts there with.
func AISDK(t testing.TB) (dir, node string) {
	t.Helper()
	testlane.FullOnly(t, "the Vercel AI SDK (npm)")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("AI SDK end-to-end test skipped: node is not installed")
	}
	if p := os.Getenv("MODELGATE_AISDK_DIR"); p != "" {
		return p, node
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	out, err := exec.Command("sh", filepath.Join(root, "scripts", "ai-sdk.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/ai-sdk.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], node
}

// OpenAIAgents returns a directory holding the OpenAI Agents SDK's
// node_modules ($MODELGATE_OPENAI_AGENTS_DIR, else what
// scripts/openai-agents.sh installs), and the node binary to run scripts
// there with.
func OpenAIAgents(t testing.TB) (dir, node string) {
	t.Helper()
	testlane.FullOnly(t, "the OpenAI Agents SDK (npm)")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("OpenAI Agents SDK end-to-end test skipped: node is not installed")
	}
	if p := os.Getenv("MODELGATE_OPENAI_AGENTS_DIR"); p != "" {
		return p, node
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	out, err := exec.Command("sh", filepath.Join(root, "scripts", "openai-agents.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/openai-agents.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], node
}
