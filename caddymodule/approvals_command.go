package caddymodule

import (
	"context"
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
			if state == "all" {
				state = ""
			}
			return showApprovals(cmd, func(ctx context.Context, cl *admincli.Client) ([]admincli.Approval, error) {
				return cl.Approvals(ctx, state)
			})
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
			return showApprovals(cmd, func(ctx context.Context, cl *admincli.Client) ([]admincli.Approval, error) {
				a, err := cl.Decide(ctx, args[0], approve)
				return []admincli.Approval{a}, err
			})
		}}
}

// showApprovals runs one admin call and prints the approvals it answers:
// a table, or JSON with --json (a list, or the one approval decided).
func showApprovals(cmd *cobra.Command, call func(context.Context, *admincli.Client) ([]admincli.Approval, error)) error {
	cl, err := adminClient(cmd)
	if err != nil {
		return err
	}
	ctx, cancel := cliContext()
	defer cancel()
	got, err := call(ctx, cl)
	if err != nil {
		return err
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		var v any = got
		if cmd.Name() != "list" {
			v = got[0]
		}
		return json.NewEncoder(cmd.OutOrStdout()).Encode(v)
	}
	return admincli.WriteApprovals(cmd.OutOrStdout(), got)
}
