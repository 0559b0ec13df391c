package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/modelgate/modelgate/admincli"
	"github.com/modelgate/modelgate/agenthook"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "agent-hook",
		Usage: "[--agent <name>] [--webhook-env <VAR>] [--event Stop|Notification] [--timeout <duration>]",
		Short: "Posts a coding agent's Stop/Notification event to a team chat webhook",
		Long: `
Reads a coding agent's hook event (Claude Code's Stop or Notification JSON)
on stdin and posts a one-line message to the team chat incoming webhook whose
URL is in the environment variable named by --webhook-env. With the variable
unset or empty it does nothing. It always exits 0 and never writes to stdout,
so it can never block or steer the agent; problems are one line on stderr.

On SessionStart and UserPromptSubmit (Gemini CLI: BeforeAgent) it instead
reports the session's work context to the gateway: the git remote
(normalised, credentials stripped), branch and head commit of the event's
working directory, posted to <base>/v1/work/context with the agent's own key
(MODELGATE_URL and MODELGATE_API_KEY, else ANTHROPIC_BASE_URL with
ANTHROPIC_AUTH_TOKEN or ANTHROPIC_API_KEY, else OPENAI_BASE_URL with
OPENAI_API_KEY, else GOOGLE_GEMINI_BASE_URL with GEMINI_API_KEY, else the
stored "caddy modelgate login").

Register it with "caddy agent-hook install --global" or
"caddy agent-hook install --project DIR".`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().String("agent", agenthook.DefaultAgent, "Agent name shown in the message")
			cmd.Flags().String("webhook-env", agenthook.DefaultWebhookEnv, "Environment variable holding the webhook URL")
			cmd.Flags().String("event", "", "Event kind to report (Stop or Notification) instead of the event's hook_event_name")
			cmd.Flags().Duration("timeout", agenthook.DefaultTimeout, "Total time allowed for delivery, retry included")
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(runAgentHook)
			cmd.AddCommand(registrationCommand("install"), registrationCommand("uninstall"))
		},
	})
}

func runAgentHook(fl caddycmd.Flags) (int, error) {
	timeout, err := fl.GetDuration("timeout")
	if err != nil {
		timeout = agenthook.DefaultTimeout
	}
	agenthook.Run(agenthook.Options{
		Agent:      fl.String("agent"),
		WebhookEnv: fl.String("webhook-env"),
		Event:      fl.String("event"),
		Timeout:    timeout,
		Stdin:      os.Stdin,
		Stderr:     os.Stderr,
		Login:      storedLogin,
	})
	return caddy.ExitCodeSuccess, nil
}

// registrationCommand builds the install or uninstall child; they share
// their flags and differ only in the edit they apply.
func registrationCommand(name string) *cobra.Command {
	c := &cobra.Command{Use: name}
	if name == "install" {
		c.Short = "Registers agent-hook in the agent's settings file"
		c.Long = `
Merges a hook registration running this binary's "agent-hook" into the
agent's settings file, keeping every other setting and hook. Running it again
changes nothing.`
	} else {
		c.Short = "Removes agent-hook's registration from the agent's settings file"
		c.Long = `
Removes only registrations running "<binary> agent-hook"; other hooks and
settings stay as they are.`
	}
	c.Flags().Bool("global", false, "Edit the user's settings (~/<config-dir>/settings.json; Codex: hooks.json)")
	c.Flags().String("project", "", "Edit the project's settings (DIR/<config-dir>/settings.local.json; Codex: hooks.json, Gemini CLI: settings.json)")
	c.Flags().String("for", "claude", "The agent: claude, codex or gemini")
	eventsHelp := "Comma-separated hook events to register (default: the agent's: Claude Code " + strings.Join(agenthook.AgentClaude.Events, ",") +
		"; Codex " + strings.Join(agenthook.AgentCodex.Events, ",") + "; Gemini CLI " + strings.Join(agenthook.AgentGemini.Events, ",") + ")"
	if name == "uninstall" {
		eventsHelp = "Comma-separated hook events to clear (default all)"
	}
	c.Flags().String("events", "", eventsHelp)
	c.Flags().String("config-dir", "", "Agent settings directory name (default: the agent's, .claude, .codex or .gemini)")
	c.RunE = caddycmd.WrapCommandFuncForCobra(func(fl caddycmd.Flags) (int, error) {
		return runRegistration(name, fl)
	})
	return c
}

func runRegistration(name string, fl caddycmd.Flags) (int, error) {
	home, _ := os.UserHomeDir()
	agent, err := agenthook.AgentKindNamed(fl.String("for"))
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	path, err := agenthook.SettingsPathFor(agent, fl.Bool("global"), fl.String("project"), fl.String("config-dir"), home)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	events := agenthook.ParseEvents(fl.String("events"))
	if name == "install" && len(events) == 0 {
		events = agent.Events
	}
	var changed bool
	if name == "install" {
		exe, err := os.Executable()
		if err != nil {
			return caddy.ExitCodeFailedStartup, fmt.Errorf("finding this binary's path: %w", err)
		}
		if len(events) == 0 {
			return caddy.ExitCodeFailedStartup, errors.New("--events names no event")
		}
		changed, err = agenthook.InstallFor(agent, path, events, agenthook.HookCommand(exe))
		if err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
	} else {
		changed, err = agenthook.Uninstall(path, events)
		if err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
	}
	switch {
	case !changed:
		fmt.Printf("%s: already up to date\n", path)
	case name == "install":
		fmt.Printf("%s: registered agent-hook for %s\n", path, strings.Join(events, ", "))
	default:
		fmt.Printf("%s: removed agent-hook\n", path)
	}
	return caddy.ExitCodeSuccess, nil
}

// storedLogin is the gateway and key of `caddy modelgate login`, renewed
// when due: the work context of an agent whose key comes from its
// apiKeyHelper is posted with the same person's key.
func storedLogin(ctx context.Context) (string, string, *http.Client, error) {
	l := &admincli.Login{}
	s, err := l.Load()
	if err != nil {
		return "", "", nil, err
	}
	key, err := l.Key(ctx)
	if err != nil {
		return "", "", nil, err
	}
	hc, err := admincli.HTTPClient(s.CACert)
	if err != nil {
		return "", "", nil, err
	}
	return s.Gateway, key, hc, nil
}
