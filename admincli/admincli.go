// Package admincli is `caddy modelgate keys …`: key management against a
// running gateway's admin API, for people at a terminal (tables) and for
// scripts (--json). It is plain Go; caddymodule wires it into Caddy's CLI.
package admincli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/money"
)

// Client talks to one gateway's admin API with an admin key.
type Client struct {
	Gateway  string // base URL, e.g. https://gateway.example.com
	AdminKey string
	HTTP     *http.Client
}

// Key is an API key as the admin API answers it.
type Key = adminapi.Key

// apiError is the gateway's Anthropic-shaped error.
type apiError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (c *Client) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Gateway, "/")+path, rd)
	if err != nil {
		return nil, fmt.Errorf("--gateway: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.AdminKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, reachError(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(out, &e) == nil && e.Error.Message != "" {
			return nil, fmt.Errorf("the gateway answered %d: %s", resp.StatusCode, e.Error.Message)
		}
		return nil, fmt.Errorf("the gateway answered %d", resp.StatusCode)
	}
	return out, nil
}

// ListKeys reads every key, page by page.
func (c *Client) ListKeys(ctx context.Context) ([]Key, error) {
	return listAll[Key](ctx, c, adminapi.KeysPath, "key list")
}

// listAll reads every item of an admin list endpoint, following its
// after_id pages.
func listAll[T any](ctx context.Context, c *Client, endpoint, what string) ([]T, error) {
	var all []T
	after := ""
	for {
		path := endpoint + "?limit=1000"
		if after != "" {
			path += "&after_id=" + url.QueryEscape(after)
		}
		b, err := c.do(ctx, http.MethodGet, path, nil)
		if err != nil {
			return nil, err
		}
		var page adminapi.Page[T]
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, fmt.Errorf("the gateway's %s is unreadable: %v", what, err)
		}
		all = append(all, page.Data...)
		if !page.HasMore || page.LastID == nil || *page.LastID == "" {
			return all, nil
		}
		after = *page.LastID
	}
}

// GetKey reads one key.
func (c *Client) GetKey(ctx context.Context, id string) (Key, error) {
	var k Key
	b, err := c.do(ctx, http.MethodGet, adminapi.KeysPath+"/"+url.PathEscape(id), nil)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	return k, err
}

// CreateKey creates a key; the answer holds the secret, once.
func (c *Client) CreateKey(ctx context.Context, fields map[string]any) (Key, error) {
	var k Key
	b, err := c.do(ctx, http.MethodPost, adminapi.KeysPath, fields)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	return k, err
}

// UpdateKey changes the fields given.
func (c *Client) UpdateKey(ctx context.Context, id string, fields map[string]any) (Key, error) {
	var k Key
	b, err := c.do(ctx, http.MethodPost, adminapi.KeysPath+"/"+url.PathEscape(id), fields)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	return k, err
}

// Flags are a key's settable fields as the CLI takes them; empty strings
// are left out. Budget is "<dollars>:<period>", e.g. 50:monthly; 0 is a
// budget that admits no paid use, and "none" removes a budget.
type Flags struct {
	Name, Workspace, Models, Budget, SoftBudget, SessionBudget, Expires, Status string
	RPM, TPM, MaxParallel                                                       string
}

// Fields turns flags into an API body, checking each.
func (f Flags) Fields() (map[string]any, error) {
	m := map[string]any{}
	if f.Name != "" {
		m["name"] = f.Name
	}
	if f.Workspace != "" {
		m["workspace_id"] = f.Workspace
	}
	if f.Status != "" {
		m["status"] = f.Status
	}
	if f.Expires != "" {
		if _, err := time.Parse(time.RFC3339, f.Expires); err != nil {
			return nil, errors.New("--expires: want an RFC 3339 time, e.g. 2026-12-31T00:00:00Z")
		}
		m["expires_at"] = f.Expires
	}
	if f.Models != "" {
		var models []string
		for _, s := range strings.Split(f.Models, ",") {
			if s = strings.TrimSpace(s); s != "" {
				models = append(models, s)
			}
		}
		m["models"] = models
	}
	switch amount, period, ok := strings.Cut(f.Budget, ":"); {
	case f.Budget == "":
	case f.Budget == "none":
		m["budget"] = nil
	case !ok:
		return nil, errors.New("--budget: want <dollars>:<period>, e.g. 50:monthly (period daily, weekly, monthly or total), or none")
	default:
		c, err := money.ParseDollars(amount)
		if err != nil {
			return nil, fmt.Errorf("--budget: %v", err)
		}
		m["budget"] = map[string]string{"amount": strconv.FormatInt(c, 10), "period": period}
	}
	for flag, v := range map[string]string{"soft_budget": f.SoftBudget, "session_budget": f.SessionBudget} {
		switch {
		case v == "":
		case v == "none":
			m[flag] = nil
		default:
			c, err := money.ParseDollars(v)
			if err != nil {
				return nil, fmt.Errorf("--%s: %v", strings.ReplaceAll(flag, "_", "-"), err)
			}
			m[flag] = strconv.FormatInt(c, 10)
		}
	}
	for flag, v := range map[string]string{"rpm": f.RPM, "tpm": f.TPM, "max_parallel": f.MaxParallel} {
		if v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("--%s: want a whole number", strings.ReplaceAll(flag, "_", "-"))
			}
			m[flag] = n
		}
	}
	return m, nil
}

func centsToDollars(c string) string {
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil {
		return c
	}
	return money.Dollars(n)
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func intOrDash(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

// WriteKeys prints keys as a table, each key's workspace by its name in
// workspaceNames (id → name) when it is there, else by its id.
func WriteKeys(w io.Writer, keys []Key, workspaceNames map[string]string) error {
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].CreatedBy.Type == "config" && keys[j].CreatedBy.Type != "config" })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tWORKSPACE\tSTATUS\tMODELS\tBUDGET\tRPM\tFROM")
	for _, k := range keys {
		models := strings.Join(k.Models, ",")
		if models == "" {
			models = "all"
		}
		budget := "-"
		if k.Budget != nil {
			budget = centsToDollars(k.Budget.Amount) + "/" + k.Budget.Period
		}
		from := "api"
		if k.CreatedBy.Type == "config" {
			from = "Caddyfile"
		}
		ws := orDash(k.WorkspaceID)
		if k.WorkspaceID != nil && workspaceNames[*k.WorkspaceID] != "" {
			ws = workspaceNames[*k.WorkspaceID]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, ws, k.Status, models, budget, intOrDash(k.RPM), from)
	}
	return tw.Flush()
}

// WriteKey prints one key, and its secret when the answer carries it.
func WriteKey(w io.Writer, k Key) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, value) }
	row("id", k.ID)
	row("name", k.Name)
	row("workspace", orDash(k.WorkspaceID))
	row("status", k.Status)
	models := strings.Join(k.Models, ", ")
	if models == "" {
		models = "all"
	}
	row("models", models)
	budget := "-"
	if k.Budget != nil {
		budget = centsToDollars(k.Budget.Amount) + " " + k.Budget.Period
	}
	row("budget", budget)
	for name, v := range map[string]*string{"soft budget": k.SoftBudget, "session budget": k.SessionBudget} {
		if v != nil {
			row(name, centsToDollars(*v))
		}
	}
	row("rpm", intOrDash(k.RPM))
	row("tpm", intOrDash(k.TPM))
	row("max parallel", intOrDash(k.MaxParallel))
	row("expires", orDash(k.ExpiresAt))
	row("created", orDash(k.CreatedAt))
	row("hint", orDash(k.PartialKeyHint))
	if err := tw.Flush(); err != nil {
		return err
	}
	if k.Value != "" {
		_, err := fmt.Fprintf(w, "\nsecret (shown once, store it now):\n%s\n", k.Value)
		return err
	}
	return nil
}
