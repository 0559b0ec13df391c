package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/modelgate/modelgate/admincli"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "modelgate",
		Usage: "keys create|list|show|update|revoke | usage [--days N] | cost --pr N|--ticket KEY|--repo R [--days N] | resume <session> [--api-key-id ID] | login [--print-key] | env | audit verify [--gateway URL] [--ca-cert FILE] [--admin-key-env VAR] [--json]",
		Short: "Manages a running gateway's runtime keys and shows its spend",
		Long: `
Talks to a running Modelgate gateway's admin API with its admin key, read
from the environment variable named by --admin-key-env (default
MODELGATE_ADMIN_KEY), never from the command line.

  caddy modelgate keys list
  caddy modelgate keys create --name alice-laptop --models coder,claude --budget 50:monthly --rpm 60
  caddy modelgate keys show apikey_…
  caddy modelgate keys update apikey_… --budget 80:monthly
  caddy modelgate keys revoke apikey_…
  caddy modelgate usage --days 7
  caddy modelgate cost --pr 123 --repo github.com/acme/shop
  caddy modelgate cost --ticket ABC-123 --days 30
  caddy modelgate resume 5f1c…-session --api-key-id apikey_…
  caddy modelgate login --gateway https://gateway.example.com
  caddy modelgate login --print-key
  caddy modelgate login --browser
  caddy modelgate env
  caddy modelgate audit verify --config Caddyfile
  caddy modelgate approvals list
  caddy modelgate approvals approve apr_…

login signs a person in with the company's identity provider through the
gateway (device flow: open the link it prints, enter the code; --browser, or
a provider without a device flow: a browser on this machine) and keeps a
short-lived key for them in the user's config directory (mode 0600),
renewed without a prompt until the provider refuses. --print-key prints a
valid key (renewing it first when needed): set Claude Code's apiKeyHelper
to "caddy modelgate login --print-key". env prints the settings Claude
Code, Codex, Gemini CLI, opencode and the SDKs need. These need no admin
key.

--workspace takes a workspace's name or id; --models must name aliases the
gateway serves. audit verify reads the ledger database the Caddyfile names
(or --ledger) and checks the audit log's hash chain; it needs no gateway
and no admin key. usage lists tokens and spend per day, key and model, free
local models included. request-increase asks, with your own key (login's,
or $MODELGATE_API_KEY), for a higher spend limit; requests lists the
requests you may resolve (an admin key, or a group lead's login), and
requests approve|deny resolves one. resume lets a session the loop breaker paused go on
(the key's own caller may; a stopped one needs the admin key). A new key's secret is printed once. --json prints
JSON for scripts.

A gateway whose certificate comes from a private CA or Caddy's ` + "`tls internal`" + `
is trusted with --ca-cert FILE (its root certificate, PEM), or with
SSL_CERT_FILE=FILE, which Go reads on Linux. login keeps a copy of the
--ca-cert it was given, so --print-key renews through it, and env prints
NODE_EXTRA_CA_CERTS and SSL_CERT_FILE for the clients.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.PersistentFlags().String("gateway", "http://localhost:4000", "The gateway's base URL")
			cmd.PersistentFlags().String("ca-cert", "", "PEM file of a CA to trust besides the system's (a private CA, Caddy's tls internal root.crt)")
			cmd.PersistentFlags().String("admin-key-env", "MODELGATE_ADMIN_KEY", "Environment variable that holds the gateway's admin key")
			cmd.PersistentFlags().Bool("json", false, "Print JSON instead of a table")
			keys := &cobra.Command{Use: "keys", Short: "Create, list, show, update and revoke runtime keys"}
			keys.AddCommand(keysList(), keysShow(), keysCreate(), keysUpdate(), keysRevoke())
			cmd.AddCommand(keys, usageCommand(), costCommand(), loginCommand(), envCommand(), auditCommand(), requestIncreaseCommand(), requestsCommand(), approvalsCommand(), resumeCommand())
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		},
	})
}

func adminClient(cmd *cobra.Command) (*admincli.Client, error) {
	gw, _ := cmd.Flags().GetString("gateway")
	env, _ := cmd.Flags().GetString("admin-key-env")
	key := os.Getenv(env)
	if key == "" {
		return nil, fmt.Errorf("$%s is empty: export the gateway's admin key there (or name another variable with --admin-key-env)", env)
	}
	ca, _ := cmd.Flags().GetString("ca-cert")
	hc, err := admincli.HTTPClient(ca)
	if err != nil {
		return nil, err
	}
	return &admincli.Client{Gateway: gw, AdminKey: key, HTTP: hc}, nil
}

func cliContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

func printKey(cmd *cobra.Command, k admincli.Key) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(k)
	}
	return admincli.WriteKey(cmd.OutOrStdout(), k)
}

func keyFlags(c *cobra.Command, f *admincli.Flags, create bool) {
	c.Flags().StringVar(&f.Name, "name", "", "Name shown in lists and reports")
	c.Flags().StringVar(&f.Workspace, "workspace", "", "Workspace name or id (wrkspc_…)")
	c.Flags().StringVar(&f.Models, "models", "", "Aliases the key may use, comma-separated (default: all)")
	c.Flags().StringVar(&f.Budget, "budget", "", "Budget as <dollars>:<period>, e.g. 50:monthly (0 stops paid use; none removes it)")
	c.Flags().StringVar(&f.SoftBudget, "soft-budget", "", "Alert-only budget in dollars, or none")
	c.Flags().StringVar(&f.SessionBudget, "session-budget", "", "Budget per coding-agent session in dollars, or none")
	c.Flags().StringVar(&f.RPM, "rpm", "", "Requests per minute")
	c.Flags().StringVar(&f.TPM, "tpm", "", "Tokens per minute")
	c.Flags().StringVar(&f.MaxParallel, "max-parallel", "", "Requests in progress at once")
	c.Flags().StringVar(&f.Expires, "expires", "", "Expiry as an RFC 3339 time")
	if !create {
		c.Flags().StringVar(&f.Status, "status", "", "active, inactive or archived")
	}
}

func keysList() *cobra.Command {
	return &cobra.Command{Use: "list", Short: "List every key, the Caddyfile's included", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := adminClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			keys, err := c.ListKeys(ctx)
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(keys)
			}
			// Workspaces by name; an id still identifies one when the
			// list cannot be read.
			names := map[string]string{}
			if wss, err := c.ListWorkspaces(ctx); err == nil {
				for _, ws := range wss {
					names[ws.ID] = ws.Name
				}
			}
			return admincli.WriteKeys(cmd.OutOrStdout(), keys, names)
		}}
}

func keysShow() *cobra.Command {
	return &cobra.Command{Use: "show <id>", Short: "Show one key", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := adminClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			k, err := c.GetKey(ctx, args[0])
			if err != nil {
				return err
			}
			return printKey(cmd, k)
		}}
}

func keysCreate() *cobra.Command {
	var f admincli.Flags
	c := &cobra.Command{Use: "create --name <name> [flags]", Short: "Create a key; its secret is printed once", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Name == "" {
				return errors.New("--name is required")
			}
			fields, err := f.Fields()
			if err != nil {
				return err
			}
			cl, err := adminClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			if err := cl.Check(ctx, fields); err != nil {
				return err
			}
			k, err := cl.CreateKey(ctx, fields)
			if err != nil {
				return err
			}
			return printKey(cmd, k)
		}}
	keyFlags(c, &f, true)
	return c
}

func keysUpdate() *cobra.Command {
	var f admincli.Flags
	c := &cobra.Command{Use: "update <id> [flags]", Short: "Change a key's name, models, limits or status", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fields, err := f.Fields()
			if err != nil {
				return err
			}
			if len(fields) == 0 {
				return errors.New("nothing to change: give at least one flag, e.g. --budget 80:monthly")
			}
			cl, err := adminClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			if err := cl.Check(ctx, fields); err != nil {
				return err
			}
			k, err := cl.UpdateKey(ctx, args[0], fields)
			if err != nil {
				return err
			}
			return printKey(cmd, k)
		}}
	keyFlags(c, &f, false)
	return c
}

func keysRevoke() *cobra.Command {
	return &cobra.Command{Use: "revoke <id>", Short: "Retire a key (status archived): every instance refuses it within seconds", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := adminClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			k, err := cl.UpdateKey(ctx, args[0], map[string]any{"status": "archived"})
			if err != nil {
				return err
			}
			return printKey(cmd, k)
		}}
}

func usageCommand() *cobra.Command {
	var days int
	c := &cobra.Command{Use: "usage", Short: "Tokens and spend by day, key and model, from the gateway's ledger", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days < 1 || days > 366 {
				return errors.New("--days: from 1 to 366")
			}
			cl, err := adminClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			rows, err := cl.Usage(ctx, days, time.Now())
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rows)
			}
			return admincli.WriteUsage(cmd.OutOrStdout(), rows)
		}}
	c.Flags().IntVar(&days, "days", 7, "How many days back, today included")
	return c
}

// loginClient is the login the flags ask for. --ca-cert is checked now
// and kept with the login; without it, the stored login's copy is
// trusted, so renewals reach a gateway on a private CA.
func loginClient(cmd *cobra.Command) (*admincli.Login, error) {
	ca, _ := cmd.Flags().GetString("ca-cert")
	if ca != "" {
		if _, err := admincli.HTTPClient(ca); err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(ca)
		if err != nil {
			return nil, fmt.Errorf("--ca-cert: %v", err)
		}
		ca = abs
	}
	l := &admincli.Login{CACert: ca, Prompt: cmd.ErrOrStderr()}
	stored, _ := l.Load()
	if stored != nil && l.CACert == "" {
		l.CACert = stored.CACert
	}
	if f := cmd.Flags().Lookup("browser"); f != nil {
		l.Browser = f.Value.String() == "true"
	}
	if f := cmd.Flags().Lookup("no-open"); f != nil {
		l.NoOpen = f.Value.String() == "true"
	}
	if cmd.Flags().Changed("gateway") {
		l.Gateway, _ = cmd.Flags().GetString("gateway")
	} else if stored != nil {
		l.Gateway = stored.Gateway
	}
	return l, nil
}

func loginCommand() *cobra.Command {
	c := &cobra.Command{Use: "login [--gateway URL] [--print-key]", Short: "Sign in with the identity provider and keep a short-lived personal key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			l, err := loginClient(cmd)
			if err != nil {
				return err
			}
			if printKey, _ := cmd.Flags().GetBool("print-key"); printKey {
				ctx, cancel := cliContext()
				defer cancel()
				key, err := l.Key(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), key)
				return nil
			}
			// The person has the device code's lifetime to sign in.
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			s, err := l.Run(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Signed in as %s (role %s); key %s expires at %s. `caddy modelgate env` prints client settings.\n",
				s.ID, s.Role, s.KeyID, s.ExpiresAt.Local().Format(time.RFC3339))
			return nil
		}}
	c.Flags().Bool("print-key", false, "Print a valid key (renewed first when needed) and nothing else: Claude Code's apiKeyHelper")
	c.Flags().Bool("browser", false, "Sign in with a browser on this machine (a loopback redirect) instead of the device flow")
	c.Flags().Bool("no-open", false, "With --browser, only print the sign-in link")
	return c
}

func envCommand() *cobra.Command {
	return &cobra.Command{Use: "env", Short: "Print the client settings for the signed-in person's key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			l, err := loginClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			if _, err := l.Key(ctx); err != nil {
				return err
			}
			s, err := l.Load()
			if err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				self = "caddy"
			}
			fmt.Fprint(cmd.OutOrStdout(), admincli.Env(s, self))
			return nil
		}}
}
