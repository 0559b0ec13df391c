package agenthook

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"
)

// AgentKind is a coding agent whose settings `agent-hook install` writes:
// where its hooks live and which of its events the hook serves. Claude
// Code, Codex and Gemini CLI share the hooks schema (event → matcher
// groups → command handlers) and the stdin fields the hook reads
// (hook_event_name, session_id, cwd).
type AgentKind struct {
	Name string
	// ConfigDir is the settings directory under the home or the project.
	ConfigDir string
	// GlobalFile and ProjectFile are the files hooks are read from.
	GlobalFile, ProjectFile string
	// Events are registered when none are named.
	Events []string
	// Timeout is written into each registration, in the agent's unit.
	Timeout int
}

// The agents install knows.
var (
	AgentClaude = AgentKind{Name: "claude", ConfigDir: DefaultConfigDir, GlobalFile: "settings.json", ProjectFile: "settings.local.json",
		Events: DefaultEvents(), Timeout: hookTimeoutSeconds}
	// Codex reads hooks.json beside its config (with
	// `[features] codex_hooks = true` in config.toml).
	AgentCodex = AgentKind{Name: "codex", ConfigDir: ".codex", GlobalFile: "hooks.json", ProjectFile: "hooks.json",
		Events: []string{EventStop, EventSessionStart, EventUserPromptSubmit}, Timeout: hookTimeoutSeconds}
	// Gemini CLI's BeforeAgent is its UserPromptSubmit; its timeouts are
	// milliseconds.
	AgentGemini = AgentKind{Name: "gemini", ConfigDir: ".gemini", GlobalFile: "settings.json", ProjectFile: "settings.json",
		Events: []string{EventSessionStart, EventBeforeAgent}, Timeout: hookTimeoutSeconds * 1000}
)

// AgentKindNamed returns the agent install writes for, by name.
func AgentKindNamed(name string) (AgentKind, error) {
	kinds := map[string]AgentKind{"claude": AgentClaude, "claude-code": AgentClaude, "codex": AgentCodex, "gemini": AgentGemini, "gemini-cli": AgentGemini}
	if k, ok := kinds[strings.ToLower(name)]; ok {
		return k, nil
	}
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return AgentKind{}, errors.New("--for " + name + ": not an agent install knows (" + strings.Join(names, ", ") + ")")
}

// SettingsPathFor is SettingsPath for the agent: its directory and file
// names, unless configDir names another directory.
func SettingsPathFor(agent AgentKind, global bool, project, configDir, home string) (string, error) {
	if configDir == "" {
		configDir = agent.ConfigDir
	}
	p, err := SettingsPath(global, project, configDir, home)
	if err != nil {
		return "", err
	}
	file := agent.ProjectFile
	if global {
		file = agent.GlobalFile
	}
	return filepath.Join(filepath.Dir(p), file), nil
}
