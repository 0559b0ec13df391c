package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/spf13/cobra"

	"github.com/modelgate/modelgate/modellist"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "gateway",
		Usage: "--config <models.yaml> [--listen <addr>] [--key-env <VAR>] [--ledger sqlite:<path>|postgres:<dsn>] [--durability sync|async] [--insecure-no-auth]",
		Short: "Starts an LLM gateway from a models file, without a Caddyfile",
		Long: `
Starts a Modelgate gateway on the given models YAML: OpenAI chat completions
and Anthropic Messages routed by alias, with usage recorded to the ledger.
It is the quick start, like 'caddy reverse-proxy'; for TLS, several keys and
reports, write a Caddyfile.

Clients authenticate with the key held in the environment variable named by
--key-env (default PROXY_KEY), sent as 'Authorization: Bearer <key>' or
'x-api-key: <key>'. That key is an admin key: it may also read /health and
the usage and cost reports. Without it the gateway refuses to start unless
--insecure-no-auth is given. The admin API is disabled.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().StringP("config", "c", "", "Path of the models YAML file (required)")
			cmd.Flags().StringP("listen", "l", "localhost:4000", "Address to listen on (plain HTTP)")
			cmd.Flags().String("key-env", "PROXY_KEY", "Environment variable that holds the client key")
			cmd.Flags().String("ledger", "", "Ledger store: sqlite:<path> or postgres:<dsn> (default: SQLite in Caddy's data dir)")
			cmd.Flags().String("durability", "async", "sync: each successful request's record is in the ledger before its answer completes; async: batched")
			cmd.Flags().Bool("insecure-no-auth", false, "Serve without authentication (trusted networks only)")
			cmd.RunE = func(cmd *cobra.Command, _ []string) error {
				// runGateway returns only when it fails (it serves until the
				// process exits). A models file's errors are lines to read
				// in a terminal, not one JSON log line with escaped newlines.
				_, err := runGateway(caddycmd.Flags{FlagSet: cmd.Flags()})
				cmd.SilenceErrors, cmd.SilenceUsage = true, true
				fmt.Fprintln(os.Stderr, err)
				return errInvalid
			}
			// Caddy's own commands are adapted once the command tree is built
			// (cobra runs its initializers before the chosen command).
			cobra.OnInitialize(func() { customizeCommands(cmd.Root()) })
		},
	})
}

func runGateway(fl caddycmd.Flags) (int, error) {
	// Without Caddy's trap, Ctrl-C would kill the process outright and
	// lose the ledger records still queued; with it, apps stop and flush.
	caddy.TrapSignals()
	modelsPath := fl.String("config")
	if modelsPath == "" {
		return caddy.ExitCodeFailedStartup, fmt.Errorf("--config: the models YAML file is required, e.g. caddy gateway --config models.yaml")
	}
	abs, err := filepath.Abs(modelsPath)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	models, warnings, err := modellist.Load(abs)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "warning:", w)
	}
	cfg, err := gatewayConfig(abs, fl.String("listen"), fl.String("key-env"), fl.String("ledger"), fl.String("durability"), fl.Bool("insecure-no-auth"))
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	if err := caddy.Run(cfg); err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	fmt.Fprintf(os.Stderr, "modelgate listening on http://%s with models: %s\n", fl.String("listen"), strings.Join(models.Aliases(), ", "))
	select {}
}

// gatewayConfig builds the same module configuration a Caddyfile with
// llm_auth, llm_admin and llm_gateway adapts to.
func gatewayConfig(modelsPath, listen, keyEnv, ledgerFlag, durability string, noAuth bool) (*caddy.Config, error) {
	var handlers []json.RawMessage
	if !noAuth {
		if keyEnv == "" {
			return nil, fmt.Errorf("--key-env: name the environment variable that holds the client key, or pass --insecure-no-auth")
		}
		if os.Getenv(keyEnv) == "" {
			return nil, fmt.Errorf("environment variable %s is unset or empty: export %s=<a long random key>, or pass --insecure-no-auth on a trusted network", keyEnv, keyEnv)
		}
		// The placeholder, not the value, goes into the config, so the
		// key never appears in the config Caddy keeps in memory.
		handlers = append(handlers, caddyconfig.JSONModuleObject(&Auth{AdminKeys: []KeyConfig{{Key: "{env." + keyEnv + "}", ID: "admin"}}}, "handler", "llm_auth", nil))
	}
	handlers = append(handlers,
		caddyconfig.JSONModuleObject(&Admin{}, "handler", "llm_admin", nil),
		caddyconfig.JSONModuleObject(&Gateway{Models: modelsPath, InsecureNoAuth: noAuth, AnswerAllPaths: true}, "handler", "llm_gateway", nil))

	if durability != "sync" && durability != "async" {
		return nil, fmt.Errorf("--durability: want sync or async, got %q", durability)
	}
	app := &App{Durability: durability}
	if ledgerFlag != "" {
		driver, dsn, ok := strings.Cut(ledgerFlag, ":")
		if strings.HasPrefix(ledgerFlag, "postgres://") || strings.HasPrefix(ledgerFlag, "postgresql://") {
			driver, dsn, ok = "postgres", ledgerFlag, true
		}
		if !ok || (driver != "sqlite" && driver != "postgres") || dsn == "" {
			return nil, fmt.Errorf("--ledger: want sqlite:<path> or postgres:<dsn>")
		}
		app.Ledger = &LedgerConfig{Driver: driver, DSN: dsn}
	}
	server := &caddyhttp.Server{
		Listen:    []string{listen},
		Routes:    caddyhttp.RouteList{{HandlersRaw: handlers}},
		AutoHTTPS: &caddyhttp.AutoHTTPSConfig{Disabled: true},
	}
	httpApp := caddyhttp.App{Servers: map[string]*caddyhttp.Server{"gateway": server}}
	return &caddy.Config{
		// No admin API and no autosave: the quick start leaves nothing
		// behind in the user's config directory.
		Admin: &caddy.AdminConfig{Disabled: true, Config: &caddy.ConfigSettings{Persist: new(bool)}},
		AppsRaw: caddy.ModuleMap{
			"http":      caddyconfig.JSON(httpApp, nil),
			"modelgate": caddyconfig.JSON(app, nil),
		},
	}, nil
}
