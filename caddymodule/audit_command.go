package caddymodule

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/spf13/cobra"

	"github.com/modelgate/modelgate/ledger"
)

// auditCommand is `caddy modelgate audit verify`. It reads the ledger
// database itself rather than asking a gateway's admin API: the point of
// the check is not to trust the running gateway (nor need it running, or
// an admin key), and it must work on a backup or a copy too.
func auditCommand() *cobra.Command {
	audit := &cobra.Command{Use: "audit", Short: "Check the audit log's hash chain"}
	var config, store, anchor string
	verify := &cobra.Command{Use: "verify [--config Caddyfile | --ledger sqlite:<path>|postgres:<dsn>] [--anchor <seq>:<hash>]",
		Short: "Walk the audit log's hash chain in the ledger database; exit 1 naming the first altered, deleted or inserted row",
		Long: `
Reads the audit log straight from the ledger database (read-only; nothing
is migrated or written) and checks its hash chain: every row's hash over
its content and the previous row's hash, seq without gaps, and the head
(the last seq and hash) against the last row. It prints the rows checked
and the head, or the first row that breaks the chain, and exits 1.

The database is the one the Caddyfile's modelgate { ledger … } names
(--config, placeholders such as {env.DATABASE_URL} resolved), or --ledger,
or the default SQLite ledger in Caddy's data directory.

Whoever can write the table can also rewrite every row after an edit and
the head with them. Keep the head this command prints somewhere the
database's writers cannot reach (a log, a ticket) and pass it back with
--anchor <seq>:<hash>: the chain must still hold that row unchanged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			driver, dsn, err := auditLedger(config, store)
			if err != nil {
				return err
			}
			a, err := parseAnchor(anchor)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			v, err := ledger.VerifyAudit(ctx, driver, dsn, a)
			if err != nil {
				return fmt.Errorf("reading the audit log: %w", err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				out := map[string]any{"intact": v.Fault == "", "rows": v.Rows, "head_seq": v.HeadSeq, "head_hash": v.HeadHash}
				if v.Fault != "" {
					out["fault"] = v.Fault
				}
				if err := json.NewEncoder(cmd.OutOrStdout()).Encode(out); err != nil {
					return err
				}
			} else if v.Fault == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "audit log intact: %d rows; head %d:%s\n", v.Rows, v.HeadSeq, v.HeadHash)
			}
			if v.Fault != "" {
				return fmt.Errorf("audit log broken after %d intact rows: %s", v.Rows, v.Fault)
			}
			return nil
		}}
	verify.Flags().StringVar(&config, "config", "", "Caddyfile whose modelgate { ledger … } names the database")
	verify.Flags().StringVar(&store, "ledger", "", "The database: sqlite:<path> or postgres:<dsn> (default: the Caddyfile's, else SQLite in Caddy's data dir)")
	verify.Flags().StringVar(&anchor, "anchor", "", "A head printed by an earlier verify, <seq>:<hash>, that the chain must still hold")
	audit.AddCommand(verify)
	return audit
}

// parseAnchor reads --anchor, <seq>:<hash>; nil when it is empty. The
// hash is compared as verify prints it, lower-case hex, so one copied in
// another case, or mistyped, is refused here rather than reported as a
// rewritten chain.
func parseAnchor(anchor string) (*ledger.AuditAnchor, error) {
	if anchor == "" {
		return nil, nil
	}
	seq, hash, ok := strings.Cut(strings.TrimSpace(anchor), ":")
	hash = strings.ToLower(hash)
	n, err := strconv.ParseInt(seq, 10, 64)
	if _, hexErr := hex.DecodeString(hash); !ok || err != nil || n < 1 || len(hash) != 64 || hexErr != nil {
		return nil, errors.New("--anchor: want <seq>:<hash> as a verify printed it, e.g. 1042:9f86d081…")
	}
	return &ledger.AuditAnchor{Seq: n, Hash: hash}, nil
}

// auditLedger is the database verify reads: --ledger, else the
// Caddyfile's, else the default SQLite file.
func auditLedger(config, store string) (driver, dsn string, err error) {
	if store != "" && config != "" {
		return "", "", errors.New("give --config or --ledger, not both")
	}
	l := &LedgerConfig{}
	switch {
	case store != "":
		d, rest, ok := strings.Cut(store, ":")
		if strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://") {
			d, rest, ok = "postgres", store, true
		}
		if !ok || (d != "sqlite" && d != "postgres") || rest == "" {
			return "", "", errors.New("--ledger: want sqlite:<path> or postgres:<dsn>")
		}
		l.Driver, l.DSN = d, rest
	case config != "":
		body, err := os.ReadFile(config)
		if err != nil {
			return "", "", fmt.Errorf("--config: %v", err)
		}
		adapted, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(body, map[string]any{"filename": config})
		if err != nil {
			return "", "", fmt.Errorf("--config %s: %v", config, err)
		}
		var cfg struct {
			Apps struct {
				Modelgate struct {
					Ledger *LedgerConfig `json:"ledger"`
				} `json:"modelgate"`
			} `json:"apps"`
		}
		if err := json.Unmarshal(adapted, &cfg); err != nil {
			return "", "", fmt.Errorf("--config %s: %v", config, err)
		}
		if cfg.Apps.Modelgate.Ledger != nil {
			l = cfg.Apps.Modelgate.Ledger
		}
	}
	return l.resolve()
}
