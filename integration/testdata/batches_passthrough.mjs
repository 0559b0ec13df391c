// Drives batches passed through to a provider's batch API with the
// official Node SDKs, unmodified: each batch is created on
// MODELGATE_BASE_A and polled, read and cancelled on MODELGATE_BASE_B.
// MODELGATE_CLAUDE and MODELGATE_OA are aliases on a fake provider that
// keeps each batch in progress until MODELGATE_FINISH is fetched.
// MODELGATE_TIGHT_KEY is a key whose budget no large batch fits.
// Prints one JSON object.
const baseA = process.env.MODELGATE_BASE_A;
const baseB = process.env.MODELGATE_BASE_B;
const apiKey = process.env.MODELGATE_API_KEY;
const claude = process.env.MODELGATE_CLAUDE;
const oa = process.env.MODELGATE_OA;
const finish = () => fetch(process.env.MODELGATE_FINISH);
const out = {};

const { until } = await import('./modelgate-batch_poll-test.mjs');
const { default: Anthropic } = await import('@anthropic-ai/sdk');
const { default: OpenAI, toFile } = await import('openai');

{
  const a = new Anthropic({ baseURL: baseA, apiKey });
  const b = new Anthropic({ baseURL: baseB, apiKey });
  const requests = [0, 1, 2].map((i) => ({ custom_id: `p-${i}`,
    params: { model: claude, max_tokens: 64, messages: [{ role: 'user', content: `Say hello ${i}` }] } }));
  const created = await a.messages.batches.create({ requests });
  out.anthropicCreated = created.processing_status;
  out.anthropicPolled = (await b.messages.batches.retrieve(created.id)).processing_status;
  await finish();
  const ended = await until(() => b.messages.batches.retrieve(created.id), (v) => v.processing_status === 'ended');
  out.anthropicCounts = ended.request_counts;
  out.anthropicResults = [];
  for await (const r of await b.messages.batches.results(created.id)) {
    out.anthropicResults.push({ id: r.custom_id, type: r.result.type, model: r.result.message?.model,
      text: r.result.type === 'succeeded' ? r.result.message.content.map((c) => c.text || '').join('') : '' });
  }
  const second = await a.messages.batches.create({ requests: requests.slice(0, 1) });
  out.anthropicCancel = (await b.messages.batches.cancel(second.id)).processing_status;
  const cancelled = await until(() => b.messages.batches.retrieve(second.id), (v) => v.processing_status === 'ended');
  out.anthropicCanceled = cancelled.request_counts.canceled;
  try {
    const tight = new Anthropic({ baseURL: baseA, apiKey: process.env.MODELGATE_TIGHT_KEY });
    await tight.messages.batches.create({ requests: [0, 1, 2, 3].map((i) => ({ custom_id: `t-${i}`,
      params: { model: claude, max_tokens: 100000, messages: [{ role: 'user', content: 'long' }] } })) });
    out.anthropicOverBudget = 'created';
  } catch (e) {
    out.anthropicOverBudget = `${e.status} ${e.error?.error?.type}`;
  }
}

{
  const a = new OpenAI({ baseURL: baseA + '/v1', apiKey });
  const b = new OpenAI({ baseURL: baseB + '/v1', apiKey });
  const lines = [0, 1].map((i) => JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions',
    body: { model: oa, max_tokens: 64, messages: [{ role: 'user', content: `Say hello ${i}` }] } }));
  const file = await a.files.create({ file: await toFile(Buffer.from(lines.join('\n') + '\n'), 'batch.jsonl'), purpose: 'batch' });
  const created = await a.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  out.openaiCreated = created.status;
  await finish();
  const done = await until(() => b.batches.retrieve(created.id), (v) => ['completed', 'failed', 'expired', 'cancelled'].includes(v.status));
  out.openaiStatus = done.status;
  out.openaiCounts = done.request_counts;
  const text = await (await b.files.content(done.output_file_id)).text();
  out.openaiOutput = text.trim().split('\n').map((l) => JSON.parse(l)).map((l) => ({ id: l.custom_id, status: l.response.status_code,
    model: l.response.body.model, text: l.response.body.choices[0].message.content }));
  const again = await a.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  out.openaiCancel = (await b.batches.cancel(again.id)).status;
  const cancelled = await until(() => b.batches.retrieve(again.id), (v) => v.status === 'cancelled');
  out.openaiCancelled = cancelled.request_counts;
}

console.log(JSON.stringify(out));
