// Drives the gateway with the official Node SDKs (openai, @anthropic-ai/sdk,
// @google/genai), each configured with the base URL it wants: a text turn,
// and a tool loop (the fake asks for get_weather, the script answers it, the
// fake then answers text). MODELGATE_SDK picks the SDK. Prints one JSON
// object: {text, toolCall, final}.
const base = process.env.MODELGATE_BASE;
const apiKey = process.env.MODELGATE_API_KEY;
const model = process.env.MODELGATE_MODEL;
const ask = "What's the weather in Oslo?";
const weatherResult = '12°C and clear in Oslo';
const out = {};

switch (process.env.MODELGATE_SDK) {
  case 'openai': {
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({ baseURL: base + '/v1', apiKey });
    const plain = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello' }] });
    out.text = plain.choices[0].message.content;
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Get the weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const messages = [{ role: 'user', content: ask }];
    const first = await client.chat.completions.create({ model, messages, tools });
    const call = first.choices[0].message.tool_calls[0];
    out.toolCall = call.function.name + ' ' + call.function.arguments;
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: weatherResult });
    let final = '';
    const stream = await client.chat.completions.create({ model, messages, tools, stream: true });
    for await (const chunk of stream) final += chunk.choices[0]?.delta?.content || '';
    out.final = final;
    break;
  }
  case 'anthropic': {
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const client = new Anthropic({ baseURL: base, apiKey });
    const plain = await client.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello' }] });
    out.text = plain.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const tools = [{ name: 'get_weather', description: 'Get the weather for a city',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
    const messages = [{ role: 'user', content: ask }];
    const first = await client.messages.create({ model, max_tokens: 256, messages, tools });
    const call = first.content.find((b) => b.type === 'tool_use');
    out.toolCall = call.name + ' ' + JSON.stringify(call.input);
    messages.push({ role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: weatherResult }] });
    const stream = client.messages.stream({ model, max_tokens: 256, messages, tools });
    out.final = (await stream.finalMessage()).content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    break;
  }
  case 'genai': {
    const { GoogleGenAI } = await import('@google/genai');
    const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });
    const plain = await ai.models.generateContent({ model, contents: 'Say hello' });
    out.text = plain.text;
    const config = { tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Get the weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }] }] };
    const contents = [{ role: 'user', parts: [{ text: ask }] }];
    const first = await ai.models.generateContent({ model, contents, config });
    const call = first.functionCalls[0];
    out.toolCall = call.name + ' ' + JSON.stringify(call.args);
    contents.push(first.candidates[0].content,
      { role: 'user', parts: [{ functionResponse: { name: call.name, id: call.id, response: { result: weatherResult } } }] });
    let final = '';
    for await (const chunk of await ai.models.generateContentStream({ model, contents, config })) final += chunk.text || '';
    out.final = final;
    break;
  }
  default:
    throw new Error('MODELGATE_SDK must be openai, anthropic or genai');
}
console.log(JSON.stringify(out));
