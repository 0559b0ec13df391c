package caddymodule

// `caddy validate` reporting like a compiler: every problem of every models
// file in one pass, one per line, file:line first, in plain text on
// stderr. Caddy's own validate stops at the first module that fails to
// provision and logs that one error as a JSON line behind the chain of
// modules that loaded it.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/caddyserver/certmagic"
	"github.com/spf13/cobra"

	"github.com/modelgate/modelgate/modellist"
)

// errInvalid ends a validate run whose problems are already printed; it
// makes the process exit 1 without Caddy logging it again.
var errInvalid = errors.New("invalid configuration")

// replaceValidate points Caddy's validate command at validateConfig. It
// runs from cobra's initializers, so that the root command is complete and
// the replacement is in place before the command's RunE is read.
func replaceValidate(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() == "validate" && c.Flags().Lookup("config") != nil && c.Flags().Lookup("envfile") != nil {
			c.RunE = func(cmd *cobra.Command, _ []string) error {
				cmd.SilenceErrors, cmd.SilenceUsage = true, true
				return validateConfig(cmd, os.Stdout, os.Stderr)
			}
		}
	}
}

// validateConfig is Caddy's validate (same flags, same steps) with the
// models files checked first and every problem printed as a plain line.
func validateConfig(cmd *cobra.Command, stdout, stderr io.Writer) error {
	fl := cmd.Flags()
	configFlag, _ := fl.GetString("config")
	adapterFlag, _ := fl.GetString("adapter")
	envfiles, _ := fl.GetStringSlice("envfile")
	fail := func(err error) error {
		fmt.Fprintln(stderr, err)
		return errInvalid
	}
	for _, f := range envfiles {
		if err := loadEnvFile(f); err != nil {
			return fail(fmt.Errorf("%s: %v", f, err))
		}
	}
	if len(envfiles) > 0 {
		// As Caddy does after an env file: it may move the storage.
		caddy.ConfigAutosavePath = filepath.Join(caddy.AppConfigDir(), "autosave.json")
		caddy.DefaultStorage = &certmagic.FileStorage{Path: caddy.AppDataDir()}
	}
	if configFlag == "" {
		if _, err := os.Stat("Caddyfile"); err == nil {
			configFlag = "Caddyfile"
		} else {
			return fail(errors.New("input file required when there is no Caddyfile in current directory (use --config flag)"))
		}
	}
	input, _, _, err := caddycmd.LoadConfig(configFlag, adapterFlag)
	if err != nil {
		return fail(fmt.Errorf("%s: %v", configFlag, err))
	}
	input = caddy.RemoveMetaFields(input)
	var cfg *caddy.Config
	if err := caddy.StrictUnmarshalJSON(input, &cfg); err != nil {
		return fail(fmt.Errorf("%s: decoding config: %v", configFlag, err))
	}

	// Every models file is read first and Caddy's provisioning after, so
	// that the problems come last, together, below Caddy's log lines.
	var lines, broken []string
	for _, path := range modelsFiles(input) {
		_, warnings, err := modellist.Load(path)
		for _, w := range warnings {
			lines = append(lines, warningLine(path, w))
		}
		if err != nil {
			broken = append(broken, path)
			lines = append(lines, err.Error())
		}
	}
	bad := len(broken) > 0
	if err := caddy.Validate(cfg); err != nil {
		bad = true
		msg := err.Error()
		// A models file's errors are above, without the chain.
		repeated := false
		for _, p := range broken {
			repeated = repeated || strings.Contains(msg, p)
		}
		if !repeated {
			lines = append(lines, configFlag+": "+trimProvisionChain(msg))
		}
	}
	for _, l := range lines {
		fmt.Fprintln(stderr, l)
	}
	if bad {
		return errInvalid
	}
	fmt.Fprintln(stdout, "Valid configuration")
	return nil
}

// modelsFiles lists the models file of every llm_gateway handler in an
// adapted config, placeholders resolved, each once.
func modelsFiles(config []byte) []string {
	var v any
	if json.Unmarshal(config, &v) != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["handler"] == "llm_gateway" {
				if m, ok := v["models"].(string); ok && m != "" {
					// An unresolvable path is Caddy's error to report.
					if p, err := caddy.NewReplacer().ReplaceOrErr(m, true, true); err == nil && !seen[p] {
						seen[p] = true
						out = append(out, p)
					}
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(v)
	return out
}

// warningLine puts a models file warning in a compiler's form:
// "file:line: warning: ...".
func warningLine(path, w string) string {
	rest, ok := strings.CutPrefix(w, path)
	if !ok {
		return "warning: " + w
	}
	loc, msg, ok := strings.Cut(rest, ": ")
	if !ok {
		return "warning: " + w
	}
	return path + loc + ": warning: " + msg
}

// trimProvisionChain drops the modules Caddy went through to reach the
// one that failed: "loading http app module: provision http: server srv0:
// … provision http.handlers.llm_auth: keys[0]: …" becomes
// "llm_auth: keys[0]: …".
func trimProvisionChain(msg string) string {
	const mark = "provision http.handlers."
	if i := strings.LastIndex(msg, mark); i >= 0 {
		return msg[i+len(mark):]
	}
	return msg
}

// loadEnvFile sets the KEY=VALUE lines of an env file that are not set
// already, as Caddy's --envfile does: blank lines and # comments are
// skipped, "export " is allowed, a value may be quoted.
func loadEnvFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimPrefix(key, "export ")
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			return fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			val = val[1 : len(val)-1]
		} else if before, _, found := strings.Cut(val, "#"); found {
			val = strings.TrimRight(before, " \t")
		}
		if _, set := os.LookupEnv(key); !set {
			if err := os.Setenv(key, val); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}
