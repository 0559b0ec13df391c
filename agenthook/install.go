package agenthook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultEvents returns the events install registers when none are named:
// the chat messages' and those that report the session's work context.
func DefaultEvents() []string {
	return []string{EventStop, EventNotification, EventSessionStart, EventUserPromptSubmit}
}

// DefaultConfigDir is Claude Code's settings directory name.
const DefaultConfigDir = ".claude"

// hookTimeoutSeconds is the timeout written into the registration. The hook
// bounds itself well below it; setting it explicitly keeps an agent from
// applying its own default (60 s or 600 s depending on the version).
const hookTimeoutSeconds = 10

// SettingsPath picks the settings file to edit: <home>/<configDir>/settings.json
// for a global install, <project>/<configDir>/settings.local.json for a
// project one (personal, not committed). An absolute configDir is used as the
// directory itself.
func SettingsPath(global bool, project, configDir, home string) (string, error) {
	if configDir == "" {
		configDir = DefaultConfigDir
	}
	switch {
	case global && project != "":
		return "", errors.New("choose either --global or --project, not both")
	case global:
		if filepath.IsAbs(configDir) {
			return filepath.Join(configDir, "settings.json"), nil
		}
		if home == "" {
			return "", errors.New("cannot find the home directory for --global")
		}
		return filepath.Join(home, configDir, "settings.json"), nil
	case project != "":
		if filepath.IsAbs(configDir) {
			return filepath.Join(configDir, "settings.local.json"), nil
		}
		abs, err := filepath.Abs(project)
		if err != nil {
			return "", err
		}
		return filepath.Join(abs, configDir, "settings.local.json"), nil
	}
	return "", errors.New("choose --global or --project DIR")
}

// HookCommand is the shell command registered for the binary at exe:
// `<exe> agent-hook`, with exe single-quoted when it needs quoting.
func HookCommand(exe string) string {
	return shellQuote(exe) + " agent-hook"
}

// ParseEvents splits a comma-separated --events value.
func ParseEvents(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Install merges a registration of command for each event into the settings
// file at path, creating it (mode 0600, since settings may hold an env block
// with the webhook URL) if missing. Every other key and hook is kept in its
// order. A registration of ours that names another binary path is updated in
// place; one that is already exact is left alone, so a second run writes
// nothing. It reports whether the file changed.
func Install(path string, events []string, command string) (bool, error) {
	return InstallFor(AgentClaude, path, events, command)
}

// InstallFor is Install with the registration in the agent's own units
// (Gemini CLI counts a hook's timeout in milliseconds).
func InstallFor(agent AgentKind, path string, events []string, command string) (bool, error) {
	if len(events) == 0 {
		events = agent.Events
	}
	return edit(path, true, func(root *object) error {
		hooks, err := root.childObject("hooks")
		if err != nil {
			return err
		}
		for _, ev := range events {
			groups, err := hooks.childArray(ev)
			if err != nil {
				return err
			}
			if groups, err = installInEvent(groups, command, agent.Timeout); err != nil {
				return fmt.Errorf("hooks.%s: %w", ev, err)
			}
			if err := hooks.setJSON(ev, groups); err != nil {
				return err
			}
		}
		return root.setJSON("hooks", hooks)
	})
}

// Uninstall removes our registrations from the settings file at path: from
// the named events, or from every event when events is empty. Groups and
// events left empty by the removal are dropped; nothing else is touched. A
// missing file is not an error. It reports whether the file changed.
func Uninstall(path string, events []string) (bool, error) {
	return edit(path, false, func(root *object) error {
		raw, ok := root.get("hooks")
		if !ok {
			return nil
		}
		hooks, err := parseObject(raw)
		if err != nil {
			return fmt.Errorf("hooks: %w", err)
		}
		names := events
		if len(names) == 0 {
			for _, m := range hooks {
				names = append(names, m.Key)
			}
		}
		removedAny := false
		for _, ev := range names {
			raw, ok := hooks.get(ev)
			if !ok {
				continue
			}
			var groups []json.RawMessage
			if err := json.Unmarshal(raw, &groups); err != nil {
				if len(events) == 0 {
					continue // not a hook list; not ours to judge
				}
				return fmt.Errorf("hooks.%s is not an array", ev)
			}
			kept, removed, err := uninstallInEvent(groups)
			if err != nil {
				return fmt.Errorf("hooks.%s: %w", ev, err)
			}
			if !removed {
				continue
			}
			removedAny = true
			if len(kept) == 0 {
				hooks.remove(ev)
			} else if err := hooks.setJSON(ev, kept); err != nil {
				return err
			}
		}
		if !removedAny {
			return nil
		}
		if len(hooks) == 0 {
			root.remove("hooks")
			return nil
		}
		return root.setJSON("hooks", hooks)
	})
}

// installInEvent returns the event's matcher groups with our handler present.
func installInEvent(groups []json.RawMessage, command string, timeout int) ([]json.RawMessage, error) {
	for gi, g := range groups {
		group, err := parseObject(g)
		if err != nil {
			continue // a malformed group is the agent's problem, not a reason to refuse
		}
		handlers, err := group.childArray("hooks")
		if err != nil {
			continue
		}
		for hi, h := range handlers {
			cmd, ours := ourCommand(h)
			if !ours {
				continue
			}
			if cmd == command {
				return groups, nil
			}
			handler, err := parseObject(h)
			if err != nil {
				continue
			}
			if err := handler.setJSON("command", command); err != nil {
				return nil, err
			}
			if handlers[hi], err = json.Marshal(handler); err != nil {
				return nil, err
			}
			if err := group.setJSON("hooks", handlers); err != nil {
				return nil, err
			}
			if groups[gi], err = json.Marshal(group); err != nil {
				return nil, err
			}
			return groups, nil
		}
	}
	entry := object{
		{Key: "matcher", Value: json.RawMessage(`"*"`)},
		{Key: "hooks", Value: nil},
	}
	handler := object{
		{Key: "type", Value: json.RawMessage(`"command"`)},
		{Key: "command", Value: nil},
		{Key: "timeout", Value: json.RawMessage(fmt.Sprint(timeout))},
	}
	if err := handler.setJSON("command", command); err != nil {
		return nil, err
	}
	if err := entry.setJSON("hooks", []object{handler}); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(entry)
	if err != nil {
		return nil, err
	}
	return append(groups, raw), nil
}

// uninstallInEvent drops our handlers, and groups that held only ours.
func uninstallInEvent(groups []json.RawMessage) (kept []json.RawMessage, removed bool, err error) {
	for _, g := range groups {
		group, perr := parseObject(g)
		if perr != nil {
			kept = append(kept, g)
			continue
		}
		raw, ok := group.get("hooks")
		var handlers []json.RawMessage
		if !ok || json.Unmarshal(raw, &handlers) != nil {
			kept = append(kept, g)
			continue
		}
		var rest []json.RawMessage
		for _, h := range handlers {
			if _, ours := ourCommand(h); ours {
				removed = true
				continue
			}
			rest = append(rest, h)
		}
		if len(rest) == len(handlers) {
			kept = append(kept, g)
			continue
		}
		if len(rest) == 0 {
			continue
		}
		if err := group.setJSON("hooks", rest); err != nil {
			return nil, false, err
		}
		b, err := json.Marshal(group)
		if err != nil {
			return nil, false, err
		}
		kept = append(kept, b)
	}
	return kept, removed, nil
}

// ourCommand reports whether a handler is a registration of this hook: a
// command handler running `<some binary> agent-hook` with no further
// arguments. A hand-written command with its own flags is the user's and is
// never rewritten or removed.
func ourCommand(raw json.RawMessage) (string, bool) {
	var h struct {
		Type    string `json:"type"`
		Command string `json:"command"`
	}
	if json.Unmarshal(raw, &h) != nil || h.Type != "command" {
		return "", false
	}
	_, rest, ok := cutShellWord(strings.TrimSpace(h.Command))
	return h.Command, ok && strings.TrimSpace(rest) == "agent-hook"
}

// edit applies change to the JSON object in path and writes the result
// atomically if it differs. A file that is not a JSON object is an error and
// stays untouched.
func edit(path string, create bool, change func(*object) error) (bool, error) {
	// Write through a symlink (dotfile managers link settings.json) rather
	// than replacing the link with a regular file; a link to nothing is
	// reported, not replaced.
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(path)
		if err != nil {
			return false, fmt.Errorf("%s is a symbolic link to something that does not exist; create its target or remove the link (left unchanged)", path)
		}
		target = resolved
	}
	old, mode, err := readSettings(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !create {
			return false, nil
		}
		old = nil
	case err != nil:
		return false, fmt.Errorf("%s: %w (left unchanged)", path, err)
	}

	var root object
	if len(bytes.TrimSpace(old)) == 0 && !create {
		return false, nil
	}
	if len(bytes.TrimSpace(old)) > 0 {
		if root, err = parseObject(old); err != nil {
			return false, fmt.Errorf("%s is not a valid settings file (left unchanged): %w", path, err)
		}
	}
	if err := change(&root); err != nil {
		return false, fmt.Errorf("%s left unchanged: %w", path, err)
	}
	compact, err := json.Marshal(root)
	if err != nil {
		return false, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return false, err
	}
	out.WriteByte('\n')
	if old != nil && sameJSON(old, out.Bytes()) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return false, err
	}
	return true, writeAtomic(target, out.Bytes(), mode)
}

// maxSettingsBytes bounds a settings file; real ones are a few kilobytes.
const maxSettingsBytes = 4 << 20

// readSettings reads a settings file and its permissions, refusing what
// is not a regular file of bounded size: a FIFO would block the agent's
// hook install forever, a device or a huge file would eat memory.
func readSettings(path string) ([]byte, fs.FileMode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0o600, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("not a regular file (%s); a settings file must be one", fi.Mode().Type())
	}
	if fi.Size() > maxSettingsBytes {
		return nil, 0, fmt.Errorf("%d bytes, more than a settings file can be (%d)", fi.Size(), maxSettingsBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	// Checked again on the open file: the path may have been swapped.
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, 0, errors.New("not a regular file; a settings file must be one")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSettingsBytes+1))
	if err != nil {
		return nil, 0, err
	}
	if len(data) > maxSettingsBytes {
		return nil, 0, fmt.Errorf("more than a settings file can be (%d bytes)", maxSettingsBytes)
	}
	return data, fi.Mode().Perm(), nil
}

// sameJSON compares ignoring formatting, so an unchanged file that someone
// formatted differently is not rewritten.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// writeAtomic replaces path with data via a temp file in the same directory
// and a rename, so a crash leaves either the old or the new file.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	// CreateTemp makes 0600 files; the umask does not apply to Chmod.
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	ok = true
	return nil
}

// shellQuote single-quotes s for sh unless it is made only of characters
// that need no quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:,@%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cutShellWord splits off the first sh word of s, understanding the quoting
// shellQuote produces plus double quotes and backslash escapes.
func cutShellWord(s string) (word, rest string, ok bool) {
	var b strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			return b.String(), s[i:], b.Len() > 0
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", "", false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return "", "", false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case c == '\\' && i+1 < len(s):
			b.WriteByte(s[i+1])
			i += 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), "", b.Len() > 0
}
