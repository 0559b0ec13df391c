package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Store persists records. Implementations are safe for concurrent use.
type Store interface {
	// Insert writes recs atomically: all of them or none.
	Insert(ctx context.Context, recs []Record) error
	// Query returns the records with Time in [From, To) that pass every
	// non-empty filter, oldest first.
	Query(ctx context.Context, f Filter) ([]Record, error)
	// Aggregate sums the records Query would return per bucket of width
	// (aligned to the Unix epoch, hence to UTC minutes, hours and days) and
	// per distinct combination of dims, so reports over millions of records
	// move only a few rows out of the database. Dimensions not in dims come
	// back empty.
	Aggregate(ctx context.Context, f Filter, width time.Duration, dims []Dimension) ([]AggregateRow, error)
	Close() error
}

// RowRejecter is implemented by stores that can tell an insert that
// failed on a row's data from one that failed on the database: the writer
// then writes the rest of the batch and sets aside only the bad row.
type RowRejecter interface {
	RejectsRow(err error) bool
}

// Conflicter is implemented by stores that can tell an insert that lost a
// lock conflict to another writer (worth an immediate retry) from an
// outage.
type Conflicter interface {
	Conflicted(err error) bool
}

// Prober is implemented by stores that can show they accept writes
// without keeping anything.
type Prober interface {
	Probe(ctx context.Context) error
}

// Dimension is a record field reports group by.
type Dimension string

// The dimensions Aggregate can group by.
const (
	DimAlias         Dimension = "alias"
	DimUpstreamModel Dimension = "upstream_model"
	DimKeyID         Dimension = "key_id"
	DimWorkspace     Dimension = "workspace"
	DimServiceTier   Dimension = "service_tier"
	DimContextWindow Dimension = "context_window"
)

// AggregateRow is the sum of one bucket's records sharing every dimension.
type AggregateRow struct {
	Bucket                                        time.Time
	Alias, UpstreamModel, KeyID, Workspace        string
	ServiceTier, ContextWindow                    string
	InputTokens, CacheCreation5m, CacheCreation1h int64
	CacheReadTokens, OutputTokens                 int64
	CostPicoUSD                                   int64
	// Cost by token type, from each record's stored prices.
	CostInput, CostOutput, CostCacheRead, CostCacheWrite5m, CostCacheWrite1h int64
	// Requests is the number of records summed that used tokens (see
	// usedTokensSQL).
	Requests int64
}

// Filter selects records. An empty list does not filter.
type Filter struct {
	From, To       time.Time
	Models         []string // aliases
	APIKeyIDs      []string
	WorkspaceIDs   []string
	ServiceTiers   []string
	ContextWindows []string
	// ExcludeServiceTiers drops records of these tiers.
	ExcludeServiceTiers []string
}

// dialect holds the few statements that differ between the databases.
type dialect struct {
	name string
	// placeholder renders the n-th (1-based) bind parameter.
	placeholder func(n int) string
	// lockMigrations serializes migrations across processes inside tx.
	lockMigrations func(ctx context.Context, tx *sql.Tx) error
	// least and greatest name the scalar min and max of two values.
	least, greatest string
	// conflict reports a transaction that lost to another one's locks
	// (a deadlock, a serialization failure): retried at once.
	conflict func(error) bool
	// sharedReservations: budget reservations live in the database
	// (PostgreSQL, shared by instances), not only in each process.
	sharedReservations bool
	// arrays: the database takes array parameters, so a batch's spend
	// and roll-up rows go in one statement per table (unnest) instead
	// of one per row, a round trip each.
	arrays bool
	// rowError reports whether an INSERT failed because of the data of a
	// row (a value the database refuses), not the database itself: only
	// then is a batch split to find and set aside the bad row.
	rowError func(error) bool
}

// migrations are applied in order, each once, each in its own transaction.
// Never edit a released entry: append a new one. Both databases run the same
// text, so it sticks to types they share; times are Unix microseconds, which
// sort and compare the same everywhere.
func migrations() []string {
	return []string{
		1: `CREATE TABLE usage_records (
	ts_us BIGINT NOT NULL,
	request_id TEXT NOT NULL,
	key_id TEXT NOT NULL,
	workspace TEXT NOT NULL,
	alias TEXT NOT NULL,
	upstream_model TEXT NOT NULL,
	provider TEXT NOT NULL,
	service_tier TEXT NOT NULL,
	endpoint TEXT NOT NULL,
	stream SMALLINT NOT NULL,
	input_tokens BIGINT NOT NULL,
	cache_creation_5m BIGINT NOT NULL,
	cache_creation_1h BIGINT NOT NULL,
	cache_read_tokens BIGINT NOT NULL,
	output_tokens BIGINT NOT NULL,
	status INTEGER NOT NULL,
	outcome TEXT NOT NULL,
	latency_us BIGINT NOT NULL,
	ttft_us BIGINT NOT NULL,
	cost_pico BIGINT NOT NULL,
	price_input BIGINT NOT NULL,
	price_output BIGINT NOT NULL,
	price_cache_read BIGINT NOT NULL,
	price_cache_write_5m BIGINT NOT NULL,
	price_cache_write_1h BIGINT NOT NULL,
	session_id TEXT NOT NULL,
	context_window TEXT NOT NULL
);
CREATE INDEX usage_records_ts ON usage_records (ts_us)`,
		2: `CREATE TABLE responses (
	id TEXT PRIMARY KEY,
	key_id TEXT NOT NULL,
	previous_id TEXT NOT NULL,
	model TEXT NOT NULL,
	created_us BIGINT NOT NULL,
	input TEXT NOT NULL,
	output TEXT NOT NULL,
	response TEXT NOT NULL
);
CREATE INDEX responses_created ON responses (created_us);
CREATE TABLE response_items (
	key_id TEXT NOT NULL,
	item_id TEXT NOT NULL,
	response_id TEXT NOT NULL,
	created_us BIGINT NOT NULL,
	item TEXT NOT NULL,
	PRIMARY KEY (key_id, item_id)
);
CREATE INDEX response_items_response ON response_items (response_id);
CREATE INDEX response_items_created ON response_items (created_us)`,
		3: `CREATE TABLE control_keys (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	workspace_id TEXT NOT NULL,
	secret_hash TEXT NOT NULL UNIQUE,
	hint TEXT NOT NULL,
	status TEXT NOT NULL,
	created_at_us BIGINT NOT NULL,
	updated_at_us BIGINT NOT NULL,
	expires_at_us BIGINT NOT NULL,
	settings TEXT NOT NULL
);
CREATE TABLE control_workspaces (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	created_at_us BIGINT NOT NULL,
	updated_at_us BIGINT NOT NULL,
	archived_at_us BIGINT NOT NULL,
	settings TEXT NOT NULL
);
CREATE TABLE control_version (
	id INTEGER PRIMARY KEY,
	version BIGINT NOT NULL
);
INSERT INTO control_version (id, version) VALUES (1, 0)`,
		4: `CREATE TABLE budget_spend (
	scope TEXT NOT NULL,
	scope_id TEXT NOT NULL,
	period TEXT NOT NULL,
	period_start_us BIGINT NOT NULL,
	spent_pico BIGINT NOT NULL,
	updated_us BIGINT NOT NULL,
	PRIMARY KEY (scope, scope_id, period, period_start_us)
);
CREATE INDEX budget_spend_start ON budget_spend (period_start_us)`,
		5: `ALTER TABLE usage_records ADD COLUMN agent TEXT NOT NULL DEFAULT ''`,
		6: `CREATE TABLE alerts_sent (
	scope TEXT NOT NULL,
	scope_id TEXT NOT NULL,
	period_start_us BIGINT NOT NULL,
	kind TEXT NOT NULL,
	sent_us BIGINT NOT NULL,
	PRIMARY KEY (scope, scope_id, period_start_us, kind)
)`,
		7: `CREATE TABLE usage_rollup (
	bucket_us BIGINT NOT NULL,
	alias TEXT NOT NULL,
	upstream_model TEXT NOT NULL,
	key_id TEXT NOT NULL,
	workspace TEXT NOT NULL,
	service_tier TEXT NOT NULL,
	context_window TEXT NOT NULL,
	input_tokens BIGINT NOT NULL,
	cache_creation_5m BIGINT NOT NULL,
	cache_creation_1h BIGINT NOT NULL,
	cache_read_tokens BIGINT NOT NULL,
	output_tokens BIGINT NOT NULL,
	cost_pico BIGINT NOT NULL,
	cost_input BIGINT NOT NULL,
	cost_output BIGINT NOT NULL,
	cost_cache_read BIGINT NOT NULL,
	cost_write_5m BIGINT NOT NULL,
	cost_write_1h BIGINT NOT NULL,
	PRIMARY KEY (bucket_us, alias, upstream_model, key_id, workspace, service_tier, context_window)
);
CREATE TABLE rollup_state (id INTEGER PRIMARY KEY, backfilled INTEGER NOT NULL);
INSERT INTO rollup_state (id, backfilled) VALUES (1, 0)`,
		8: `CREATE TABLE usage_rollup_day (
	bucket_us BIGINT NOT NULL,
	alias TEXT NOT NULL,
	upstream_model TEXT NOT NULL,
	key_id TEXT NOT NULL,
	workspace TEXT NOT NULL,
	service_tier TEXT NOT NULL,
	context_window TEXT NOT NULL,
	input_tokens BIGINT NOT NULL,
	cache_creation_5m BIGINT NOT NULL,
	cache_creation_1h BIGINT NOT NULL,
	cache_read_tokens BIGINT NOT NULL,
	output_tokens BIGINT NOT NULL,
	cost_pico BIGINT NOT NULL,
	cost_input BIGINT NOT NULL,
	cost_output BIGINT NOT NULL,
	cost_cache_read BIGINT NOT NULL,
	cost_write_5m BIGINT NOT NULL,
	cost_write_1h BIGINT NOT NULL,
	PRIMARY KEY (bucket_us, alias, upstream_model, key_id, workspace, service_tier, context_window)
);
UPDATE rollup_state SET backfilled = 0 WHERE id = 1`,
		9: `CREATE TABLE budget_reservations (
	scope TEXT NOT NULL,
	scope_id TEXT NOT NULL,
	period TEXT NOT NULL,
	period_start_us BIGINT NOT NULL,
	ticket BIGINT NOT NULL,
	pico BIGINT NOT NULL,
	expires_us BIGINT NOT NULL,
	PRIMARY KEY (scope, scope_id, period, period_start_us, ticket)
);
CREATE INDEX budget_reservations_ticket ON budget_reservations (ticket)`,
		// The roll-ups count requests (those that used tokens, as
		// usedTokensSQL, whose text the migration must repeat: released
		// migrations never change). Existing rows are counted from the
		// records still stored: records already purged by retention count
		// 0, so an old row's count can fall short of its sums. A roll-up
		// not yet built (rollup_state.backfilled = 0) is rebuilt from the
		// records, with the count, after the migrations. One GROUP BY
		// joined to the rows, not a count per row: that rescans each
		// bucket's records once per roll-up row. Buckets round down, as
		// addRollup's, for times before 1970 too.
		10: `ALTER TABLE usage_rollup ADD COLUMN requests BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_rollup_day ADD COLUMN requests BIGINT NOT NULL DEFAULT 0;
UPDATE usage_rollup SET requests = c.n FROM (SELECT ts_us - ((ts_us % 3600000000) + 3600000000) % 3600000000 AS b, alias, upstream_model, key_id,
	workspace, service_tier, context_window, COUNT(*) AS n FROM usage_records
	WHERE (input_tokens > 0 OR cache_creation_5m > 0 OR cache_creation_1h > 0 OR cache_read_tokens > 0 OR output_tokens > 0)
	GROUP BY 1, 2, 3, 4, 5, 6, 7) AS c
WHERE usage_rollup.bucket_us = c.b AND usage_rollup.alias = c.alias AND usage_rollup.upstream_model = c.upstream_model
	AND usage_rollup.key_id = c.key_id AND usage_rollup.workspace = c.workspace AND usage_rollup.service_tier = c.service_tier
	AND usage_rollup.context_window = c.context_window;
UPDATE usage_rollup_day SET requests = c.n FROM (SELECT ts_us - ((ts_us % 86400000000) + 86400000000) % 86400000000 AS b, alias, upstream_model, key_id,
	workspace, service_tier, context_window, COUNT(*) AS n FROM usage_records
	WHERE (input_tokens > 0 OR cache_creation_5m > 0 OR cache_creation_1h > 0 OR cache_read_tokens > 0 OR output_tokens > 0)
	GROUP BY 1, 2, 3, 4, 5, 6, 7) AS c
WHERE usage_rollup_day.bucket_us = c.b AND usage_rollup_day.alias = c.alias AND usage_rollup_day.upstream_model = c.upstream_model
	AND usage_rollup_day.key_id = c.key_id AND usage_rollup_day.workspace = c.workspace AND usage_rollup_day.service_tier = c.service_tier
	AND usage_rollup_day.context_window = c.context_window`,
		// The audit log is append-only: nothing here updates or deletes
		// its rows. ids sort by time (audit.go), so a page is a range of
		// ids. SCIM users and groups are kept whole as JSON beside the
		// columns their filters look up.
		11: `CREATE TABLE audit_log (
	id TEXT PRIMARY KEY,
	ts_us BIGINT NOT NULL,
	actor TEXT NOT NULL,
	action TEXT NOT NULL,
	target TEXT NOT NULL,
	source TEXT NOT NULL,
	fields TEXT NOT NULL
);
CREATE INDEX audit_log_ts ON audit_log (ts_us);
CREATE TABLE scim_users (
	id TEXT PRIMARY KEY,
	user_name_key TEXT NOT NULL UNIQUE,
	external_id TEXT NOT NULL,
	doc TEXT NOT NULL,
	updated_us BIGINT NOT NULL
);
CREATE TABLE scim_groups (
	id TEXT PRIMARY KEY,
	display_name TEXT NOT NULL,
	doc TEXT NOT NULL,
	updated_us BIGINT NOT NULL
)`,
		// Conversations API state (conversations.go). next_seq numbers
		// the items; the UPDATE that advances it is the append's lock.
		12: `CREATE TABLE conversations (
	id TEXT PRIMARY KEY,
	key_id TEXT NOT NULL,
	created_us BIGINT NOT NULL,
	metadata TEXT NOT NULL,
	next_seq BIGINT NOT NULL
);
CREATE TABLE conversation_items (
	conversation_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	item_id TEXT NOT NULL,
	item TEXT NOT NULL,
	PRIMARY KEY (conversation_id, seq)
);
CREATE INDEX conversation_items_item ON conversation_items (conversation_id, item_id)`,
		// The size of what a request carried, both ways: an MCP tool
		// call's arguments and result (its tokens are 0). Records of an
		// older release, or written by one sharing the database, read 0.
		13: `ALTER TABLE usage_records ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0`,
		// The instance that holds a budget lease's rows (ledger/leases.go),
		// so that it releases them when it restarts. Rows of an older
		// release read '' and only expire.
		14: `ALTER TABLE budget_reservations ADD COLUMN owner TEXT NOT NULL DEFAULT ''`,
		// A background response's lease: the instance running it renews
		// it; once it lapses, the run's instance is gone and any instance
		// marks the response failed (responses.go). 0: no lease (a row
		// that was never a running background response, or one from an
		// older release).
		15: `ALTER TABLE responses ADD COLUMN lease_until_us BIGINT NOT NULL DEFAULT 0`,
		// The sweep for lapsed leases reads only the rows that hold one.
		16: `CREATE INDEX responses_lease ON responses (lease_until_us) WHERE lease_until_us > 0`,
		// Dashboard sessions signed out before their cookie expires
		// (signout.go), by the digest of the session id: every instance
		// refuses them, after a restart too. A row is deleted once its
		// session would have expired anyway.
		17: `CREATE TABLE signed_out_sessions (
	id TEXT PRIMARY KEY,
	expires_us BIGINT NOT NULL
)`,
		// People SCIM deleted (SCIMStore.DeleteSCIMUser): sign-in refuses them as
		// it refuses a deactivated person, until the IdP provisions the
		// userName or externalId again.
		18: `CREATE TABLE scim_tombstones (
	user_name_key TEXT NOT NULL,
	external_id TEXT NOT NULL,
	deleted_us BIGINT NOT NULL
);
CREATE INDEX scim_tombstones_name ON scim_tombstones (user_name_key)`,
		// The audit log's hash chain (audit_chain.go): each row's seq,
		// the previous row's hash and its own; audit_head holds the last
		// seq and hash, so a deleted tail shows, and its row lock orders
		// every append. The rows already logged are chained in id order
		// by chainAuditTx in this migration's transaction (keyed by this
		// number in migrationSteps: renumber both together).
		19: `ALTER TABLE audit_log ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit_log ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN hash TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX audit_log_seq ON audit_log (seq) WHERE seq > 0;
CREATE TABLE audit_head (
	id INTEGER PRIMARY KEY,
	seq BIGINT NOT NULL,
	hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '')`,
		// An agent-reported cost that no budget counts (Record.ReportOnly):
		// deleting the record must know whether budget_spend holds it.
		// Every record written before counted, hence the default.
		20: `ALTER TABLE usage_records ADD COLUMN report_only SMALLINT NOT NULL DEFAULT 0`,
		// Retention deletes the spend rows of sessions idle past it
		// (purgeSessionSpend): found by age, session rows only.
		21: `CREATE INDEX budget_spend_session_age ON budget_spend (updated_us) WHERE scope = 'session'`,
		// Spend limits set through the Spend Limits API (spend_limits.go):
		// one row per scope and period, amount NULL for an explicit
		// no-limit override.
		22: `CREATE TABLE spend_limits (
	id TEXT PRIMARY KEY,
	scope TEXT NOT NULL,
	scope_id TEXT NOT NULL,
	period TEXT NOT NULL,
	amount_cents BIGINT,
	settings TEXT NOT NULL DEFAULT '{}',
	created_us BIGINT NOT NULL,
	updated_us BIGINT NOT NULL
);
CREATE UNIQUE INDEX spend_limits_scope ON spend_limits (scope, scope_id, period)`,
		// A person's requests for a higher limit (spend_requests.go).
		23: `CREATE TABLE spend_limit_increase_requests (
	id TEXT PRIMARY KEY,
	person TEXT NOT NULL,
	email TEXT NOT NULL DEFAULT '',
	groups_list TEXT NOT NULL DEFAULT '',
	period TEXT NOT NULL,
	amount_cents BIGINT NOT NULL,
	reason TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL,
	created_us BIGINT NOT NULL,
	resolved_us BIGINT NOT NULL DEFAULT 0,
	resolved_by TEXT NOT NULL DEFAULT '',
	spend_limit_id TEXT NOT NULL DEFAULT '',
	link_hash TEXT NOT NULL DEFAULT '',
	link_expires_us BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX spend_limit_increase_requests_created ON spend_limit_increase_requests (created_us)`,
		// The alias a request asked for when a spend limit at its cap sent
		// it to a cheaper one (at_cap downgrade); '' for every other.
		24: `ALTER TABLE usage_records ADD COLUMN downgraded_from TEXT NOT NULL DEFAULT ''`,
		// The loop breaker's trips (breaker.go): one row per trip,
		// for the breaker report; turns themselves are never written.
		25: `CREATE TABLE breaker_trips (
	ts_us BIGINT NOT NULL,
	key_id TEXT NOT NULL,
	workspace TEXT NOT NULL,
	person TEXT NOT NULL,
	session_id TEXT NOT NULL,
	agent TEXT NOT NULL,
	pattern TEXT NOT NULL,
	action TEXT NOT NULL,
	turns BIGINT NOT NULL,
	spent_pico BIGINT NOT NULL,
	velocity_pico BIGINT NOT NULL,
	estimate_pico BIGINT NOT NULL
);
CREATE INDEX breaker_trips_ts ON breaker_trips (ts_us)`,
		// What a coding session worked on, and the forge's pull requests
		// (work.go): joined to the records when a report is read, so no
		// request writes here.
		26: workMigration,
		// Coding agents' own counts of their work, for the Claude Code
		// analytics report (agent_metrics.go).
		27: agentMetricsMigration,
		// MCP tool calls waiting for a person's approval, and the
		// decisions (mcp_approvals.go); the pending list is read by state.
		28: `CREATE TABLE mcp_approvals (
	id TEXT PRIMARY KEY,
	created_us BIGINT NOT NULL,
	expires_us BIGINT NOT NULL,
	key_id TEXT NOT NULL,
	person TEXT NOT NULL,
	workspace TEXT NOT NULL,
	session_id TEXT NOT NULL,
	server TEXT NOT NULL,
	tool TEXT NOT NULL,
	args_hash TEXT NOT NULL,
	args TEXT NOT NULL,
	policy_version TEXT NOT NULL,
	binding TEXT NOT NULL,
	secret TEXT NOT NULL,
	state TEXT NOT NULL,
	decided_by TEXT NOT NULL,
	via TEXT NOT NULL,
	decided_us BIGINT NOT NULL
);
CREATE INDEX mcp_approvals_state ON mcp_approvals (state, created_us)`,
		// Batches (batches.go, batches_run.go): the files of the Files
		// API, each batch, and its items with their lease and answer, so
		// that any instance answers for a batch and runs its items.
		29: `CREATE TABLE batch_files (
	id TEXT PRIMARY KEY,
	key_id TEXT NOT NULL,
	purpose TEXT NOT NULL,
	filename TEXT NOT NULL,
	bytes BIGINT NOT NULL,
	created_us BIGINT NOT NULL,
	expires_us BIGINT NOT NULL,
	content TEXT NOT NULL
);
CREATE INDEX batch_files_key ON batch_files (key_id, created_us);
CREATE INDEX batch_files_expiry ON batch_files (expires_us);
CREATE TABLE batches (
	id TEXT PRIMARY KEY,
	key_id TEXT NOT NULL,
	api TEXT NOT NULL,
	endpoint TEXT NOT NULL,
	input_file_id TEXT NOT NULL,
	created_us BIGINT NOT NULL,
	expires_us BIGINT NOT NULL,
	cancel_us BIGINT NOT NULL,
	ended_us BIGINT NOT NULL,
	total BIGINT NOT NULL,
	metadata TEXT NOT NULL,
	output_file_id TEXT NOT NULL,
	error_file_id TEXT NOT NULL
);
CREATE INDEX batches_key ON batches (key_id, api, created_us);
CREATE INDEX batches_open ON batches (expires_us) WHERE ended_us = 0;
CREATE INDEX batches_ended ON batches (ended_us) WHERE ended_us > 0;
CREATE TABLE batch_items (
	id TEXT PRIMARY KEY,
	batch_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	custom_id TEXT NOT NULL,
	body TEXT NOT NULL,
	state TEXT NOT NULL,
	not_before_us BIGINT NOT NULL,
	lease_until_us BIGINT NOT NULL,
	owner TEXT NOT NULL,
	attempts BIGINT NOT NULL,
	status_code BIGINT NOT NULL,
	result TEXT NOT NULL
);
CREATE INDEX batch_items_batch ON batch_items (batch_id, state);
CREATE INDEX batch_items_pending ON batch_items (seq, not_before_us) WHERE state = 'pending';
CREATE INDEX batch_items_running ON batch_items (lease_until_us) WHERE state = 'running'`,
		// A seat's request (passthrough_auth): served on the caller's own
		// subscription, its cost notional, at list price (Record.Notional).
		30: `ALTER TABLE usage_records ADD COLUMN notional SMALLINT NOT NULL DEFAULT 0`,
		// The site (the Caddyfile site block: its listen addresses and
		// host matchers) a batch, its items and files belong to: a key id
		// is a label unique only within a site's llm_auth, and a site's
		// worker runs only its own items, against its own models.
		31: `ALTER TABLE batches ADD COLUMN site TEXT NOT NULL DEFAULT '';
ALTER TABLE batch_items ADD COLUMN site TEXT NOT NULL DEFAULT '';
ALTER TABLE batch_files ADD COLUMN site TEXT NOT NULL DEFAULT ''`,
		// Each person's own OAuth tokens to auth: oauth MCP servers
		// (mcp_upstream_tokens.go): sealed with the Caddyfile's key, one
		// row per server and person, versioned for compare-and-swap.
		32: `CREATE TABLE mcp_upstream_tokens (
	server TEXT NOT NULL,
	unit TEXT NOT NULL,
	sealed TEXT NOT NULL,
	expires_us BIGINT NOT NULL,
	version BIGINT NOT NULL,
	refresh_until_us BIGINT NOT NULL,
	created_us BIGINT NOT NULL,
	updated_us BIGINT NOT NULL,
	PRIMARY KEY (server, unit)
)`,
		// The connect links used, so each completes once on any instance.
		33: `CREATE TABLE mcp_upstream_links (
	nonce TEXT PRIMARY KEY,
	expires_us BIGINT NOT NULL
)`,
		// One-use grants redeemed (redeemed.go), shared by every instance.
		34: redeemedGrantsMigration,
		// Whom counted agent reports were charged to, so a gateway record
		// of their session takes them back once (agent_dedup.go).
		35: countedReportsMigration,
		// Batches passed through to a provider's batch API, with their
		// whole-batch budget hold and settlement lease
		// (batch_passthrough.go).
		36: batchPassthroughMigration,
		// One pending increase request per person and period
		// (spend_requests.go).
		37: pendingRequestMigration,
	}
}

// migrationSteps are Go steps that run in a migration's transaction
// after its statements, for what SQL shared by both databases cannot
// compute (a SHA-256 per row).
func migrationSteps() map[int]func(s *sqlStore, ctx context.Context, tx *sql.Tx) error {
	return map[int]func(*sqlStore, context.Context, *sql.Tx) error{19: (*sqlStore).chainAuditTx}
}

const recordColumns = `ts_us, request_id, key_id, workspace, alias, upstream_model, provider,
	service_tier, endpoint, stream, input_tokens, cache_creation_5m, cache_creation_1h,
	cache_read_tokens, output_tokens, status, outcome, latency_us, ttft_us, cost_pico,
	price_input, price_output, price_cache_read, price_cache_write_5m, price_cache_write_1h,
	session_id, context_window, agent, bytes, report_only, downgraded_from, notional`

const numRecordColumns = 32

// sqlStore is the Store over database/sql shared by SQLite and PostgreSQL.
type sqlStore struct {
	db *sql.DB
	d  dialect
	// insertOne, when set, inserts records one by one with a statement
	// prepared at open: cheaper in-process, where a round trip costs
	// nothing. Without it (PostgreSQL) a batch is one COPY.
	insertOne *sql.Stmt
	// insertMany is the prepared INSERT of rowsPerInsert records, beside
	// insertOne.
	insertMany *sql.Stmt
	// copyTypes are usage_records' column types as PostgreSQL's COPY
	// sends them, read from the table at open.
	copyTypes [numRecordColumns]copyType
	// pg are the PostgreSQL writer's statements, built at open.
	pg pgStatements
	// owner names this process's budget lease rows; claim holds the
	// connection whose lock says the name is taken (ledger/instance.go).
	owner string
	claim *sql.Conn
	// gone tells who watches of upstream MCP grants deleted with their
	// holder (mcp_upstream_gone.go).
	gone goneWatchers
	// yield steps an in-process writer aside between statements (SQLite
	// only; nil elsewhere).
	yield *netYield
}

// migrate brings the schema to the latest version.
func (s *sqlStore) migrate(ctx context.Context) error {
	steps := migrations()
	if err := checkMigrations(steps, migrationSteps()); err != nil {
		return fmt.Errorf("ledger %s: %w", s.d.name, err)
	}
	for v := 1; v < len(steps); v++ {
		if err := s.applyMigration(ctx, v, steps[v]); err != nil {
			return fmt.Errorf("ledger %s: migration %d: %w", s.d.name, v, err)
		}
	}
	if err := s.backfillRollup(ctx); err != nil {
		return fmt.Errorf("ledger %s: building the report roll-up: %w", s.d.name, err)
	}
	return nil
}

// checkMigrations refuses a migration slot with nothing in it: the runner
// would record it as applied, and the migration meant for that number (a
// branch merged later) would then never run on that database.
func checkMigrations(steps []string, goSteps map[int]func(*sqlStore, context.Context, *sql.Tx) error) error {
	for v := 1; v < len(steps); v++ {
		if strings.TrimSpace(steps[v]) == "" && goSteps[v] == nil {
			return fmt.Errorf("migration %d is empty: migrations must be numbered without gaps (renumber the ones after it)", v)
		}
	}
	return nil
}

func (s *sqlStore) applyMigration(ctx context.Context, v int, text string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.d.lockMigrations(ctx, tx); err != nil {
		return err
	}
	// Created under the lock so that instances starting together do not race
	// on the catalog.
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version INTEGER PRIMARY KEY,
	applied_at_us BIGINT NOT NULL)`); err != nil {
		return err
	}
	var n int
	err = tx.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM schema_migrations WHERE version = `+s.d.placeholder(1), v).Scan(&n)
	if err != nil {
		return err
	}
	if n > 0 {
		return tx.Commit()
	}
	for _, stmt := range strings.Split(text, ";\n") {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if step := migrationSteps()[v]; step != nil {
		if err := step(s, ctx, tx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, applied_at_us) VALUES (`+
			s.d.placeholder(1)+`, `+s.d.placeholder(2)+`)`,
		v, time.Now().UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) Insert(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	if s.insertOne != nil {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("ledger insert: %w", err)
		}
		defer func() { _ = tx.Rollback() }()
		if recs, err = s.settleReports(ctx, tx, recs); err != nil {
			return err
		}
		return s.insertRows(ctx, tx, recs)
	}
	// COPY runs on the connection itself, inside the transaction begun
	// on it.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if recs, err = s.settleReports(ctx, tx, recs); err != nil {
		return err
	}
	if err := copyRecords(ctx, conn, recs, s.copyTypes, s.pg.copy); err != nil {
		return err
	}
	if err := s.addSpend(ctx, tx, recs); err != nil {
		return err
	}
	if err := s.endReservations(ctx, tx, recs); err != nil {
		return err
	}
	if err := s.addRollup(ctx, tx, recs); err != nil {
		return err
	}
	// Last: a lease's rows stay locked from here to the commit only, and
	// top-ups of the lease wait on them.
	if err := s.drawLeases(ctx, tx, recs); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	return nil
}

// insertOneSQL is the single-row INSERT.
func insertOneSQL(placeholder func(int) string) string { return insertRowsSQL(placeholder, 1) }

// insertRowsSQL is the INSERT of n rows.
func insertRowsSQL(placeholder func(int) string, n int) string {
	var q strings.Builder
	q.WriteString("INSERT INTO usage_records (" + recordColumns + ") VALUES ")
	for r := range n {
		if r > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('(')
		for c := range numRecordColumns {
			if c > 0 {
				q.WriteByte(',')
			}
			q.WriteString(placeholder(r*numRecordColumns + c + 1))
		}
		q.WriteByte(')')
	}
	return q.String()
}

// rowsPerInsert is how many records the prepared multi-row INSERT takes:
// one statement run per 16 records instead of per record halves what
// database/sql and SQLite spend around each row, while the statement,
// compiled once, stays small (BenchmarkSQLiteInsertBatch).
const rowsPerInsert = 16

// insertRows runs the prepared INSERTs inside tx: 16 records a statement,
// then one at a time for the rest.
func (s *sqlStore) insertRows(ctx context.Context, tx *sql.Tx, recs []Record) error {
	many := tx.StmtContext(ctx, s.insertMany)
	defer many.Close()
	one := tx.StmtContext(ctx, s.insertOne)
	defer one.Close()
	args := make([]any, 0, rowsPerInsert*numRecordColumns)
	for rest := recs; len(rest) > 0; {
		stmt, n := one, 1
		if len(rest) >= rowsPerInsert {
			stmt, n = many, rowsPerInsert
		}
		args = args[:0]
		for i := range n {
			args = appendRecordArgs(args, &rest[i])
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("ledger insert: %w", err)
		}
		rest = rest[n:]
		s.letRequestsRun()
	}
	if err := s.addSpend(ctx, tx, recs); err != nil {
		return err
	}
	s.letRequestsRun()
	if err := s.endReservations(ctx, tx, recs); err != nil {
		return err
	}
	if err := s.addRollup(ctx, tx, recs); err != nil {
		return err
	}
	s.letRequestsRun()
	// Last: a lease's rows stay locked from here to the commit only, and
	// top-ups of the lease wait on them.
	if err := s.drawLeases(ctx, tx, recs); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	return nil
}

// letRequestsRun gives this goroutine's processor to the requests waiting
// for one. SQLite runs in the process, so a batch's statements are CPU
// work in the writer's goroutine, and Go lets a running goroutine keep its
// processor up to 10 ms before it preempts it: with GOMAXPROCS 1 or 2 (a
// small container, a pinned gateway) a request that became runnable
// during a 256-record batch waited for the whole batch, ~2 ms. Between
// statements of 16 records the batch steps aside instead, letting run
// both the requests already runnable and those whose network I/O became
// ready meanwhile (netYield).
func (s *sqlStore) letRequestsRun() { s.yield.yield() }

// recordValue is one column's value of a record: an integer, or a text
// when text is set.
type recordValue struct {
	n    int64
	s    string
	text bool
}

func intValue(n int64) recordValue   { return recordValue{n: n} }
func textValue(s string) recordValue { return recordValue{s: s, text: true} }

// recordRow is a record's column values in recordColumns order: the one
// place that order is written down for both the INSERT's arguments and
// PostgreSQL's COPY.
func recordRow(r *Record) [numRecordColumns]recordValue {
	var stream, reportOnly, notional int64
	if r.Stream {
		stream = 1
	}
	if r.ReportOnly {
		reportOnly = 1
	}
	if r.Notional {
		notional = 1
	}
	// [...]: a value missing from the list fails to compile instead of
	// passing 0 for the last column.
	return [...]recordValue{intValue(r.Time.UnixMicro()), textValue(r.RequestID), textValue(r.KeyID), textValue(r.Workspace), textValue(r.Alias),
		textValue(r.UpstreamModel), textValue(r.Provider), textValue(r.ServiceTier), textValue(string(r.Endpoint)), intValue(stream),
		intValue(r.InputTokens), intValue(r.CacheCreation5m), intValue(r.CacheCreation1h), intValue(r.CacheReadTokens), intValue(r.OutputTokens),
		intValue(int64(r.Status)), textValue(string(r.Outcome)), intValue(r.Latency.Microseconds()), intValue(r.TTFT.Microseconds()), intValue(r.CostPicoUSD),
		intValue(r.Prices.Input), intValue(r.Prices.Output), intValue(r.Prices.CacheRead), intValue(r.Prices.CacheWrite5m), intValue(r.Prices.CacheWrite1h),
		textValue(r.SessionID), textValue(r.contextWindow()), textValue(r.Agent), intValue(r.Bytes), intValue(reportOnly), textValue(r.DowngradedFrom), intValue(notional)}
}

// appendRecordArgs appends a record's column values in recordColumns order,
// each as int64 or string: database/sql passes those to the driver as
// they are, where named types (Endpoint, Outcome) or an int take its
// reflection path, a fifth of SQLite's insert (BenchmarkSQLiteInsertBatch).
func appendRecordArgs(args []any, r *Record) []any {
	for _, v := range recordRow(r) {
		if v.text {
			args = append(args, v.s)
		} else {
			args = append(args, v.n)
		}
	}
	return args
}

// where renders the filter as a WHERE clause, appending its arguments.
func (s *sqlStore) where(q *strings.Builder, args []any, f Filter) []any {
	return s.whereOn(q, args, f, "ts_us")
}

// whereOn is where with another time column (the roll-up's bucket_us).
func (s *sqlStore) whereOn(q *strings.Builder, args []any, f Filter, timeCol string) []any {
	args = append(args, f.From.UnixMicro(), f.To.UnixMicro())
	q.WriteString(" WHERE " + timeCol + " >= " + s.d.placeholder(len(args)-1) + " AND " + timeCol + " < " + s.d.placeholder(len(args)))
	args = s.appendIn(q, args, "alias", f.Models, false)
	args = s.appendIn(q, args, "key_id", f.APIKeyIDs, false)
	args = s.appendIn(q, args, "workspace", f.WorkspaceIDs, false)
	args = s.appendIn(q, args, "service_tier", f.ServiceTiers, false)
	args = s.appendIn(q, args, "context_window", f.ContextWindows, false)
	args = s.appendIn(q, args, "service_tier", f.ExcludeServiceTiers, true)
	return args
}

// appendIn writes " AND col [NOT] IN (…)" with a parameter for each of
// vals, appended to args; nothing when vals is empty.
func (s *sqlStore) appendIn(q *strings.Builder, args []any, col string, vals []string, not bool) []any {
	if len(vals) == 0 {
		return args
	}
	q.WriteString(" AND " + col)
	if not {
		q.WriteString(" NOT")
	}
	q.WriteString(" IN (")
	for i, v := range vals {
		if i > 0 {
			q.WriteByte(',')
		}
		args = append(args, v)
		q.WriteString(s.d.placeholder(len(args)))
	}
	q.WriteByte(')')
	return args
}

func (s *sqlStore) Aggregate(ctx context.Context, f Filter, width time.Duration, dims []Dimension) ([]AggregateRow, error) {
	w := width.Microseconds()
	if w <= 0 {
		return nil, fmt.Errorf("ledger aggregate: bucket width %v too small", width)
	}
	cols, groupBy := aggregateColumns(dims)
	out, err := s.aggregate(ctx, f, w, cols, groupBy, false)
	if err != nil && ctx.Err() == nil {
		// Even clamped rows overflow one SUM when enough of them sit at the
		// bounds (SQLite fails with "integer overflow" past 8,192 records
		// at MaxCost in one group): sum the costs in halves instead, which
		// costs more and so runs only when needed.
		out, err = s.aggregate(ctx, f, w, cols, groupBy, true)
	}
	return out, err
}

// aggregate runs Aggregate's query; split sums each cost in two halves
// (see splitSum), which no number of bounded records can overflow.
func (s *sqlStore) aggregate(ctx context.Context, f Filter, w int64, cols []string, groupBy string, split bool) ([]AggregateRow, error) {
	if w%rollupWidth.Microseconds() == 0 && hourAligned(f.From) && hourAligned(f.To) {
		return s.aggregateRollup(ctx, f, w, cols, groupBy, split)
	}
	return s.aggregateRecords(ctx, f, w, cols, groupBy, split)
}

// hourAligned reports whether t starts an hour (UTC), where the roll-up
// can answer exactly.
func hourAligned(t time.Time) bool { return t.UnixMicro()%rollupWidth.Microseconds() == 0 }

// aggregateRecords sums the records themselves.
func (s *sqlStore) aggregateRecords(ctx context.Context, f Filter, w int64, cols []string, groupBy string, split bool) ([]AggregateRow, error) {
	var q strings.Builder
	args := []any{w}
	// Every summed value is clamped to the record bounds first: rows stored
	// before the writer enforced them may hold anything, and one overflow
	// would fail every report over their range.
	sum := func(expr string) string {
		if s.d.name == "postgres" {
			// PostgreSQL sums bigints as numeric: saturate before the cast.
			return "CAST(LEAST(SUM(" + expr + "), 9223372036854775807) AS BIGINT)"
		}
		return "CAST(SUM(" + expr + ") AS BIGINT)"
	}
	costSum := func(expr string) string {
		if !split {
			return sum(expr) + ", 0"
		}
		return sum("("+expr+") >> "+strconv.Itoa(splitShift)) + ", " + sum("("+expr+") & "+strconv.Itoa(1<<splitShift-1))
	}
	clamp := func(expr string, max int64) string {
		return s.d.least + "(" + s.d.greatest + "(" + expr + ", 0), " + strconv.FormatInt(max, 10) + ")"
	}
	tokens := func(col string) string { return clamp(col, MaxTokens) }
	cost := func(tokCol, priceCol string) string {
		return costSum(clamp(tokens(tokCol)+" * "+clamp(priceCol, MaxPrice), MaxCost))
	}
	q.WriteString("SELECT ts_us / " + s.d.placeholder(1) + ", " + strings.Join(cols, ", ") + ", " +
		sum(tokens("input_tokens")) + ", " + sum(tokens("cache_creation_5m")) + ", " + sum(tokens("cache_creation_1h")) + ", " +
		sum(tokens("cache_read_tokens")) + ", " + sum(tokens("output_tokens")) + ", " + costSum(clamp("cost_pico", MaxCost)) + ", " +
		cost("input_tokens", "price_input") + ", " + cost("output_tokens", "price_output") + ", " +
		cost("cache_read_tokens", "price_cache_read") + ", " + cost("cache_creation_5m", "price_cache_write_5m") + ", " +
		cost("cache_creation_1h", "price_cache_write_1h") + ", " + sum("CASE WHEN "+usedTokensSQL+" THEN 1 ELSE 0 END") + " FROM usage_records")
	args = s.where(&q, args, f)
	q.WriteString(" GROUP BY " + groupBy + " ORDER BY 1")
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger aggregate: %w", err)
	}
	return scanAggregates(rows, w, split)
}

func (s *sqlStore) Query(ctx context.Context, f Filter) ([]Record, error) {
	var q strings.Builder
	q.WriteString("SELECT " + recordColumns + " FROM usage_records")
	args := s.where(&q, nil, f)
	q.WriteString(" ORDER BY ts_us")
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger query: %w", err)
	}
	return scanRecords(rows)
}

// Probe inserts one row inside a transaction it rolls back: it proves
// the connection, the table and the right to insert, and keeps nothing.
func (s *sqlStore) Probe(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	r := Record{Time: time.Now().UTC(), RequestID: "readiness-probe", Outcome: OutcomeOK}
	_, err = tx.ExecContext(ctx, insertOneSQL(s.d.placeholder), appendRecordArgs(nil, &r)...)
	return err
}

// Conflicted implements Conflicter.
func (s *sqlStore) Conflicted(err error) bool {
	return s.d.conflict != nil && s.d.conflict(err)
}

// RejectsRow implements RowRejecter.
func (s *sqlStore) RejectsRow(err error) bool {
	return s.d.rowError != nil && s.d.rowError(err)
}

func (s *sqlStore) Close() error {
	if s.claim != nil {
		_ = s.claim.Close()
	}
	if s.insertOne != nil {
		_ = s.insertOne.Close()
		_ = s.insertMany.Close()
	}
	s.yield.close()
	return s.db.Close()
}

func numberedPlaceholder(n int) string { return "$" + strconv.Itoa(n) }
func questionPlaceholder(int) string   { return "?" }

// scanRecords reads rows of recordColumns and closes them.
func scanRecords(rows *sql.Rows) ([]Record, error) {
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var ts, lat, ttft int64
		var stream, reportOnly, notional int
		if err := rows.Scan(&ts, &r.RequestID, &r.KeyID, &r.Workspace, &r.Alias, &r.UpstreamModel,
			&r.Provider, &r.ServiceTier, &r.Endpoint, &stream, &r.InputTokens, &r.CacheCreation5m,
			&r.CacheCreation1h, &r.CacheReadTokens, &r.OutputTokens, &r.Status, &r.Outcome, &lat, &ttft,
			&r.CostPicoUSD, &r.Prices.Input, &r.Prices.Output, &r.Prices.CacheRead, &r.Prices.CacheWrite5m,
			&r.Prices.CacheWrite1h, &r.SessionID, &r.ContextWindow, &r.Agent, &r.Bytes, &reportOnly, &r.DowngradedFrom, &notional); err != nil {
			return nil, fmt.Errorf("ledger query: %w", err)
		}
		r.Time = time.UnixMicro(ts).UTC()
		r.Latency = time.Duration(lat) * time.Microsecond
		r.TTFT = time.Duration(ttft) * time.Microsecond
		r.Stream = stream != 0
		r.ReportOnly = reportOnly != 0
		r.Notional = notional != 0
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger query: %w", err)
	}
	return out, nil
}

// scanAggregates reads the rows of an aggregate query and closes them.
func scanAggregates(rows *sql.Rows, w int64, split bool) ([]AggregateRow, error) {
	defer rows.Close()
	var out []AggregateRow
	var costs [6]splitSum
	for rows.Next() {
		var a AggregateRow
		var b int64
		if err := rows.Scan(&b, &a.Alias, &a.UpstreamModel, &a.KeyID, &a.Workspace, &a.ServiceTier,
			&a.ContextWindow, &a.InputTokens, &a.CacheCreation5m, &a.CacheCreation1h, &a.CacheReadTokens,
			&a.OutputTokens, &costs[0].hi, &costs[0].lo, &costs[1].hi, &costs[1].lo, &costs[2].hi, &costs[2].lo,
			&costs[3].hi, &costs[3].lo, &costs[4].hi, &costs[4].lo, &costs[5].hi, &costs[5].lo, &a.Requests); err != nil {
			return nil, fmt.Errorf("ledger aggregate: %w", err)
		}
		if !split {
			a.CostPicoUSD, a.CostInput, a.CostOutput = costs[0].hi, costs[1].hi, costs[2].hi
			a.CostCacheRead, a.CostCacheWrite5m, a.CostCacheWrite1h = costs[3].hi, costs[4].hi, costs[5].hi
		} else {
			a.CostPicoUSD, a.CostInput, a.CostOutput = costs[0].value(), costs[1].value(), costs[2].value()
			a.CostCacheRead, a.CostCacheWrite5m, a.CostCacheWrite1h = costs[3].value(), costs[4].value(), costs[5].value()
		}
		a.Bucket = time.UnixMicro(b * w).UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger aggregate: %w", err)
	}
	return out, nil
}

// aggregateColumns are the dimension columns of an aggregate query and
// its GROUP BY: grouping only by what the report shows keeps the
// database's sort small.
func aggregateColumns(dims []Dimension) ([]string, string) {
	all := [...]Dimension{DimAlias, DimUpstreamModel, DimKeyID, DimWorkspace, DimServiceTier, DimContextWindow}
	cols := make([]string, 0, len(all))
	groupBy := "1"
	for _, d := range all {
		if slices.Contains(dims, d) {
			cols = append(cols, string(d))
			groupBy += ", " + strconv.Itoa(len(cols)+1)
		} else {
			cols = append(cols, "''")
		}
	}
	return cols, groupBy
}
