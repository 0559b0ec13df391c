// Streams one answer with an official Node SDK (MODELGATE_SDK: openai or
// anthropic) and reports what the SDK assembled: the text, how many
// message starts / roles and ids it saw, the final usage. Prints one JSON
// object.
const base = process.env.MODELGATE_BASE;
const apiKey = process.env.MODELGATE_API_KEY;
const model = process.env.MODELGATE_MODEL;
const out = { text: '', starts: 0, ids: [], errors: 0 };

switch (process.env.MODELGATE_SDK) {
  case 'anthropic': {
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const client = new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
    const stream = client.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello' }] });
    stream.on('streamEvent', (ev) => { if (ev.type === 'message_start') out.starts++; });
    const msg = await stream.finalMessage();
    out.text = msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    out.blocks = msg.content.length;
    out.stop = msg.stop_reason;
    out.input = msg.usage.input_tokens;
    out.output = msg.usage.output_tokens;
    break;
  }
  case 'openai': {
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({ baseURL: base + '/v1', apiKey, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model, stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Say hello' }] });
    const ids = new Set();
    for await (const chunk of stream) {
      ids.add(chunk.id);
      const d = chunk.choices[0]?.delta;
      if (d?.role) out.starts++;
      out.text += d?.content || '';
      if (chunk.choices[0]?.finish_reason) out.stop = chunk.choices[0].finish_reason;
      if (chunk.usage) { out.input = chunk.usage.prompt_tokens; out.output = chunk.usage.completion_tokens; }
    }
    out.ids = [...ids];
    break;
  }
  default:
    throw new Error('MODELGATE_SDK must be openai or anthropic');
}
console.log(JSON.stringify(out));
