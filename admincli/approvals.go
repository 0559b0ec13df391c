package admincli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/modelgate/modelgate/adminapi"
)

// Approval is an MCP tool call's approval as the admin API answers it.
type Approval = adminapi.MCPApproval

// Approvals lists approvals in state ("" for every state), newest first.
func (c *Client) Approvals(ctx context.Context, state string) ([]Approval, error) {
	q := url.Values{"limit": {"1000"}}
	if state != "" {
		q.Set("state", state)
	}
	out, err := c.do(ctx, "GET", adminapi.MCPApprovalsPath+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	var list adminapi.MCPApprovalList
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("the gateway's approval list is not JSON: %v", err)
	}
	return list.Data, nil
}

// Decide approves or denies pending approval id.
func (c *Client) Decide(ctx context.Context, id string, approve bool) (Approval, error) {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	out, err := c.do(ctx, "POST", adminapi.MCPApprovalsPath+"/"+url.PathEscape(id)+"/"+verb, struct{}{})
	if err != nil {
		return Approval{}, err
	}
	var a Approval
	if err := json.Unmarshal(out, &a); err != nil {
		return Approval{}, fmt.Errorf("the gateway's answer is not JSON: %v", err)
	}
	return a, nil
}

// WriteApprovals prints approvals as a table, the arguments cut to a line.
func WriteApprovals(w io.Writer, list []Approval) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tCALLER\tTOOL\tARGUMENTS\tEXPIRES\tDECIDED BY")
	for _, a := range list {
		who := a.APIKeyID
		if a.Person != "" {
			who = a.Person
		}
		args := strings.Join(strings.Fields(a.Arguments), " ")
		if r := []rune(args); len(r) > 60 {
			args = string(r[:60]) + "…"
		}
		by := a.DecidedBy
		if by == "" {
			by = "-"
		} else if a.Via != "" {
			by += " (" + a.Via + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\n", a.ID, a.State, who, a.Server, a.Tool, args, a.ExpiresAt, by)
	}
	return tw.Flush()
}
