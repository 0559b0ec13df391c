// Drives the batch APIs with the official Node SDKs, unmodified: Anthropic's
// messages.batches (create, retrieve, list, results, cancel, delete) and
// OpenAI's files + batches (create, retrieve, list, cancel, content). Every
// batch is created on MODELGATE_BASE_A and polled and read on
// MODELGATE_BASE_B (the same gateway, or another instance on the same
// ledger). MODELGATE_MODELS names the aliases its requests spread over.
// Prints one JSON object.
const baseA = process.env.MODELGATE_BASE_A;
const baseB = process.env.MODELGATE_BASE_B;
const apiKey = process.env.MODELGATE_API_KEY;
const models = process.env.MODELGATE_MODELS.split(',');
// MODELGATE_HOLD is an alias whose upstream holds every request that says
// "hold-N" until MODELGATE_RELEASE?n=N is fetched: a batch on it is still
// running when it is cancelled.
const hold = process.env.MODELGATE_HOLD;
const release = (n) => fetch(`${process.env.MODELGATE_RELEASE}?n=${n}`);
const out = {};

const { until } = await import('./modelgate-batch_poll-test.mjs');
const { default: Anthropic } = await import('@anthropic-ai/sdk');
const { default: OpenAI, toFile } = await import('openai');

{
  const a = new Anthropic({ baseURL: baseA, apiKey });
  const b = new Anthropic({ baseURL: baseB, apiKey });
  // The last request names its model as Claude Code would, mapped by
  // the models file's model_aliases.
  const requests = [...models, 'claude-sonnet-4-5-20250929'].map((model, i) => ({
    custom_id: `item-${i}`,
    params: { model, max_tokens: 64, messages: [{ role: 'user', content: `Say hello ${i}` }] },
  }));
  const created = await a.messages.batches.create({ requests });
  out.anthropicCreated = created.processing_status;
  const ended = await until(() => b.messages.batches.retrieve(created.id), (v) => v.processing_status === 'ended');
  out.anthropicCounts = ended.request_counts;
  out.anthropicResults = [];
  for await (const r of await b.messages.batches.results(created.id)) {
    out.anthropicResults.push({ id: r.custom_id, type: r.result.type,
      text: r.result.type === 'succeeded' ? r.result.message.content.map((c) => c.text || '').join('') : '' });
  }
  const listed = [];
  for await (const batch of b.messages.batches.list({ limit: 1 })) listed.push(batch.id);
  out.anthropicListed = listed.includes(created.id);
  // A long batch cancelled at once: what had not run ends canceled.
  const many = Array.from({ length: 200 }, (_, i) => ({ custom_id: `many-${i}`,
    params: { model: hold, max_tokens: 8, messages: [{ role: 'user', content: `hold-1 ${i}` }] } }));
  const second = await a.messages.batches.create({ requests: many });
  const cancelling = await b.messages.batches.cancel(second.id);
  out.anthropicCancel = cancelling.processing_status;
  await release(1);
  const secondEnded = await until(() => b.messages.batches.retrieve(second.id), (v) => v.processing_status === "ended");
  out.anthropicCanceled = secondEnded.request_counts.canceled;
  out.anthropicDeleted = (await b.messages.batches.delete(second.id)).type;
  try {
    await b.messages.batches.retrieve(second.id);
    out.anthropicAfterDelete = 'found';
  } catch (e) {
    out.anthropicAfterDelete = `${e.status} ${e.error?.error?.type}`;
  }
}

{
  const a = new OpenAI({ baseURL: baseA + '/v1', apiKey });
  const b = new OpenAI({ baseURL: baseB + '/v1', apiKey });
  const lines = models.map((model, i) => JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions',
    body: { model, messages: [{ role: 'user', content: `Say hello ${i}` }] } }));
  const file = await a.files.create({ file: await toFile(Buffer.from(lines.join('\n') + '\n'), 'batch.jsonl'), purpose: 'batch' });
  out.openaiFile = { purpose: file.purpose, bytes: file.bytes };
  const created = await a.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h',
    metadata: { job: 'nightly' } });
  const done = await until(() => b.batches.retrieve(created.id), (v) => ['completed', 'failed', 'expired', 'cancelled'].includes(v.status));
  out.openaiStatus = done.status;
  out.openaiCounts = done.request_counts;
  out.openaiMetadata = done.metadata;
  const text = await (await b.files.content(done.output_file_id)).text();
  out.openaiOutput = text.trim().split('\n').map((l) => JSON.parse(l)).map((l) => ({ id: l.custom_id, status: l.response.status_code,
    text: l.response.body.choices[0].message.content }));
  const listed = [];
  for await (const batch of b.batches.list({ limit: 1 })) listed.push(batch.id);
  out.openaiListed = listed.includes(created.id);
  const manyLines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ custom_id: `many-${i}`, method: 'POST',
    url: '/v1/chat/completions', body: { model: hold, messages: [{ role: 'user', content: `hold-2 ${i}` }] } }));
  const manyFile = await a.files.create({ file: await toFile(Buffer.from(manyLines.join('\n')), 'many.jsonl'), purpose: 'batch' });
  const second = await a.batches.create({ input_file_id: manyFile.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  out.openaiCancel = (await b.batches.cancel(second.id)).status;
  await release(2);
  const cancelled = await until(() => b.batches.retrieve(second.id), (v) => v.status === 'cancelled');
  out.openaiCancelled = cancelled.request_counts;
  const errors = await (await b.files.content(cancelled.error_file_id)).text();
  out.openaiCancelledLine = JSON.parse(errors.trim().split('\n').at(-1)).error.code;
  try {
    await a.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' });
  } catch (e) {
    out.openaiWrongEndpoint = `${e.status} ${e.error?.type} ${e.error?.param}`;
  }
}

console.log(JSON.stringify(out));
