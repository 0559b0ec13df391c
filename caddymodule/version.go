package caddymodule

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/spf13/cobra"
)

// Version is Modelgate's release, set when a release is tagged (see
// CHANGELOG.md); between releases it names the next one with -dev.
const Version = "v0.3.0-dev"

// ModulePath is Modelgate's Go module.
const ModulePath = "github.com/modelgate/modelgate"

// customizeCommands adapts Caddy's own commands once the command tree is
// built: validate reports like a compiler, version and build-info name
// Modelgate's version. Caddy prints the main module as (devel) or, in an
// xcaddy build from a checkout, as the zero pseudo-version; neither tells
// which Modelgate a server runs.
func customizeCommands(root *cobra.Command) {
	if caddy.CustomVersion == "" {
		// Caddy prepends it to its own version in `caddy version`.
		caddy.CustomVersion = "Modelgate " + Version + " on Caddy"
	}
	replaceValidate(root)
	for _, c := range root.Commands() {
		if c.Name() == "build-info" {
			c.RunE = func(cmd *cobra.Command, _ []string) error {
				bi, ok := debug.ReadBuildInfo()
				if !ok {
					cmd.SilenceErrors, cmd.SilenceUsage = true, true
					fmt.Fprintln(os.Stderr, "no build information")
					return errInvalid
				}
				fmt.Print(buildInfo(bi, Version))
				return nil
			}
		}
	}
}

// buildInfo is Go's build information with Modelgate's module given its
// version where the toolchain recorded none.
func buildInfo(bi *debug.BuildInfo, version string) string {
	c := *bi
	c.Deps = nil
	stamp := func(m debug.Module) *debug.Module {
		if m.Path == ModulePath && (m.Version == "(devel)" || m.Version == "" || strings.HasPrefix(m.Version, "v0.0.0-00010101000000-")) {
			m.Version = version
			m.Sum = ""
		}
		return &m
	}
	c.Main = *stamp(bi.Main)
	for _, d := range bi.Deps {
		c.Deps = append(c.Deps, stamp(*d))
	}
	return c.String()
}
