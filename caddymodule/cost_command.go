package caddymodule

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/modelgate/modelgate/admincli"
	"github.com/modelgate/modelgate/workctx"
)

// costCommand is `caddy modelgate cost`: what a pull request, a ticket or
// a repository cost, from the gateway's work report.
func costCommand() *cobra.Command {
	var days int
	var f admincli.WorkFilter
	c := &cobra.Command{Use: "cost", Short: "Spend of a pull request, ticket or repository, from the gateway's work report", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days < 1 || days > 366 {
				return errors.New("--days: from 1 to 366")
			}
			if f.PR == 0 && f.Ticket == "" && f.Repo == "" {
				return errors.New("name the work: --pr NUMBER (with --repo when several repositories have one), --ticket KEY or --repo REPOSITORY")
			}
			if f.PR < 0 {
				return errors.New("--pr: a pull request number")
			}
			if n := workctx.NormalizeRepo(f.Repo); n != "" {
				f.Repo = n
			}
			cl, err := adminClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			rows, err := cl.WorkCost(ctx, days, time.Now(), f)
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rows)
			}
			return admincli.WriteCost(cmd.OutOrStdout(), rows)
		}}
	c.Flags().Int64Var(&f.PR, "pr", 0, "Pull (merge) request number")
	c.Flags().StringVar(&f.Ticket, "ticket", "", "Ticket key, e.g. ABC-123")
	c.Flags().StringVar(&f.Repo, "repo", "", "Repository as the report names it, e.g. github.com/acme/shop (a remote URL is normalised)")
	c.Flags().IntVar(&days, "days", 30, "How many days back, today included")
	return c
}
