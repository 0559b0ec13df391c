package ledger

import (
	"context"
	"database/sql"
	"fmt"
)

// insertColumnsSQL inserts a whole batch of records as one array per
// column. It is one statement text for every batch size, so PostgreSQL
// parses and plans it once per connection; a multi-row VALUES list was a
// new statement for each size, with 29 parameters a row to bind, parse
// and plan (BenchmarkPostgresInsertBatch in BENCHMARKS.md).
const insertColumnsSQL = `INSERT INTO usage_records (` + recordColumns + `)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
	$8::text[], $9::text[], $10::smallint[], $11::bigint[], $12::bigint[], $13::bigint[],
	$14::bigint[], $15::bigint[], $16::integer[], $17::text[], $18::bigint[], $19::bigint[], $20::bigint[],
	$21::bigint[], $22::bigint[], $23::bigint[], $24::bigint[], $25::bigint[],
	$26::text[], $27::text[], $28::text[], $29::bigint[])`

// recordArrays holds a batch column by column, in recordColumns' order.
type recordArrays struct {
	ts                                                []int64
	requestID, keyID, workspace, alias, upstream, prv []string
	tier, endpoint                                    []string
	stream                                            []int16
	input, write5m, write1h, cacheRead, output        []int64
	status                                            []int32
	outcome                                           []string
	latency, ttft, cost                               []int64
	pInput, pOutput, pCacheRead, pWrite5m, pWrite1h   []int64
	session, cwindow, agent                           []string
	bytes                                             []int64
}

func columnsOf(recs []Record) *recordArrays {
	n := len(recs)
	ints := func() []int64 { return make([]int64, n) }
	strs := func() []string { return make([]string, n) }
	a := &recordArrays{
		ts: ints(), requestID: strs(), keyID: strs(), workspace: strs(), alias: strs(), upstream: strs(), prv: strs(),
		tier: strs(), endpoint: strs(), stream: make([]int16, n),
		input: ints(), write5m: ints(), write1h: ints(), cacheRead: ints(), output: ints(),
		status: make([]int32, n), outcome: strs(), latency: ints(), ttft: ints(), cost: ints(),
		pInput: ints(), pOutput: ints(), pCacheRead: ints(), pWrite5m: ints(), pWrite1h: ints(),
		session: strs(), cwindow: strs(), agent: strs(), bytes: ints(),
	}
	for i := range recs {
		r := &recs[i]
		a.ts[i], a.requestID[i], a.keyID[i], a.workspace[i] = r.Time.UnixMicro(), r.RequestID, r.KeyID, r.Workspace
		a.alias[i], a.upstream[i], a.prv[i], a.tier[i], a.endpoint[i] = r.Alias, r.UpstreamModel, r.Provider, r.ServiceTier, string(r.Endpoint)
		if r.Stream {
			a.stream[i] = 1
		}
		a.input[i], a.write5m[i], a.write1h[i], a.cacheRead[i], a.output[i] = r.InputTokens, r.CacheCreation5m, r.CacheCreation1h, r.CacheReadTokens, r.OutputTokens
		a.status[i], a.outcome[i] = int32(r.Status), string(r.Outcome)
		a.latency[i], a.ttft[i], a.cost[i] = r.Latency.Microseconds(), r.TTFT.Microseconds(), r.CostPicoUSD
		p := r.Prices
		a.pInput[i], a.pOutput[i], a.pCacheRead[i], a.pWrite5m[i], a.pWrite1h[i] = p.Input, p.Output, p.CacheRead, p.CacheWrite5m, p.CacheWrite1h
		a.session[i], a.cwindow[i], a.agent[i], a.bytes[i] = r.SessionID, r.contextWindow(), r.Agent, r.Bytes
	}
	return a
}

// insertColumns inserts recs inside tx with insertColumnsSQL.
func insertColumns(ctx context.Context, tx *sql.Tx, recs []Record) error {
	a := columnsOf(recs)
	if _, err := tx.ExecContext(ctx, insertColumnsSQL,
		a.ts, a.requestID, a.keyID, a.workspace, a.alias, a.upstream, a.prv,
		a.tier, a.endpoint, a.stream, a.input, a.write5m, a.write1h,
		a.cacheRead, a.output, a.status, a.outcome, a.latency, a.ttft, a.cost,
		a.pInput, a.pOutput, a.pCacheRead, a.pWrite5m, a.pWrite1h,
		a.session, a.cwindow, a.agent, a.bytes); err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	return nil
}
