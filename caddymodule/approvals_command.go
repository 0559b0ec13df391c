package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/modelgate/modelgate/admincli"
)

// approvalsCommand is `caddy modelgate approvals list|approve|deny`.
func approvalsCommand() *cobra.Command {
	c := &cobra.Command{Use: "approvals", Short: "List, approve and deny MCP tool calls waiting for a person's approval"}
	var state string
	list := &cobra.Command{Use: "list [--state pending|approved|denied|expired|consumed|all]", Short: "MCP approvals, newest first (pending ones by default)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := adminClient(cmd)
			if err != nil {
				return err
			}
			if state == "all" {
				state = ""
			}
			ctx, cancel := cliContext()
			defer cancel()
			got, err := cl.Approvals(ctx, state)
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(got)
			}
			return admincli.WriteApprovals(cmd.OutOrStdout(), got)
		}}
	list.Flags().StringVar(&state, "state", "pending", "Which approvals: pending, approved, denied, expired, consumed or all")
	c.AddCommand(list, decideCommand(true), decideCommand(false))
	return c
}

func decideCommand(approve bool) *cobra.Command {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	return &cobra.Command{Use: verb + " <apr_…>", Short: fmt.Sprintf("%s a pending MCP tool call (once: the call runs or fails, and the approval is spent)", verb),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("give the approval's id, e.g. apr_0123…; `caddy modelgate approvals list` shows the pending ones")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := adminClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			a, err := cl.Decide(ctx, args[0], approve)
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(a)
			}
			return admincli.WriteApprovals(cmd.OutOrStdout(), []admincli.Approval{a})
		}}
}
