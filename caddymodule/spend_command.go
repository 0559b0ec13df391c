package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/admincli"
)

// personClient is a client with the caller's own key: $MODELGATE_API_KEY,
// else the key `caddy modelgate login` keeps (renewed when needed); with
// admin, the admin key comes first (an approver may be either).
func personClient(ctx context.Context, cmd *cobra.Command, admin bool) (*admincli.Client, error) {
	if admin {
		env, _ := cmd.Flags().GetString("admin-key-env")
		if os.Getenv(env) != "" {
			return adminClient(cmd)
		}
	}
	ca, _ := cmd.Flags().GetString("ca-cert")
	hc, err := admincli.HTTPClient(ca)
	if err != nil {
		return nil, err
	}
	gw, _ := cmd.Flags().GetString("gateway")
	if key := os.Getenv("MODELGATE_API_KEY"); key != "" {
		return &admincli.Client{Gateway: gw, AdminKey: key, HTTP: hc}, nil
	}
	l, err := loginClient(cmd)
	if err != nil {
		return nil, err
	}
	key, err := l.Key(ctx)
	if err != nil {
		return nil, fmt.Errorf("%v (or set $MODELGATE_API_KEY to your key)", err)
	}
	if l.Gateway != "" {
		gw = l.Gateway
	}
	return &admincli.Client{Gateway: gw, AdminKey: key, HTTP: hc}, nil
}

// withClient runs f with personClient's client, under the CLI's time
// bound.
func withClient(cmd *cobra.Command, admin bool, f func(ctx context.Context, c *admincli.Client) error) error {
	ctx, cancel := cliContext()
	defer cancel()
	c, err := personClient(ctx, cmd, admin)
	if err != nil {
		return err
	}
	return f(ctx, c)
}

func printRequests(cmd *cobra.Command, rs ...adminapi.IncreaseRequest) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(rs)
	}
	return admincli.WriteRequests(cmd.OutOrStdout(), rs)
}

func requestIncreaseCommand() *cobra.Command {
	var amount, period, reason string
	c := &cobra.Command{Use: "request-increase --amount <dollars> --reason <why>", Short: "Ask your approvers for a higher spend limit of your own",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			if amount == "" {
				return fmt.Errorf("--amount: give the limit you ask for in dollars, e.g. --amount 50")
			}
			return withClient(cmd, false, func(ctx context.Context, c *admincli.Client) error {
				r, err := c.RequestIncrease(ctx, amount, period, reason)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "Asked for a %s limit of $%s (request %s); your approvers were told, and you will be.\n", r.Period, amount, r.ID)
				return printRequests(cmd, r)
			})
		}}
	c.Flags().StringVar(&amount, "amount", "", "The limit you ask for, in dollars")
	c.Flags().StringVar(&period, "period", "", "daily, weekly or monthly (default: the period of the limit that holds you)")
	c.Flags().StringVar(&reason, "reason", "", "Why, for your approvers")
	return c
}

func requestsCommand() *cobra.Command {
	var status string
	c := &cobra.Command{Use: "requests", Short: "List spend limit increase requests (approvers see theirs to resolve)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			return withClient(cmd, true, func(ctx context.Context, c *admincli.Client) error {
				rs, err := c.IncreaseRequests(ctx, status)
				if err != nil {
					return err
				}
				return printRequests(cmd, rs...)
			})
		}}
	c.Flags().StringVar(&status, "status", "pending", "pending, approved or denied; empty for all")
	resolve := func(approve bool) *cobra.Command {
		var amount string
		use, short := "deny <id>", "Deny a request"
		if approve {
			use, short = "approve <id> [--amount <dollars>]", "Approve a request: the person's limit becomes what they asked (or --amount)"
		}
		r := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				cmd.SilenceUsage = true
				return withClient(cmd, true, func(ctx context.Context, c *admincli.Client) error {
					out, err := c.ResolveIncrease(ctx, args[0], approve, amount)
					if err != nil {
						return err
					}
					return printRequests(cmd, out)
				})
			}}
		if approve {
			r.Flags().StringVar(&amount, "amount", "", "The new limit in dollars (default: what was asked)")
		}
		return r
	}
	c.AddCommand(resolve(true), resolve(false))
	return c
}
