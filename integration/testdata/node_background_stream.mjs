// responses.create({background: true, stream: true}) with the official
// openai Node SDK: the events of the run from its creation, then a
// retrieve-stream resuming after the second event. Prints one JSON
// object: {types, id, resumed}.
const { default: OpenAI } = await import('openai');
const client = new OpenAI({ baseURL: process.env.MODELGATE_BASE + '/v1', apiKey: process.env.MODELGATE_API_KEY, maxRetries: 0 });
const model = process.env.MODELGATE_MODEL;
const stream = await client.responses.create({ model, input: 'Say hello', background: true, stream: true });
const out = { types: [], id: '', resumed: [] };
for await (const e of stream) {
  out.types.push(e.type);
  if (e.type === 'response.created') out.id = e.response.id;
}
const again = await client.responses.retrieve(out.id, { stream: true, starting_after: 1 });
for await (const e of again) {
  out.resumed.push(e.sequence_number);
}
console.log(JSON.stringify(out));
