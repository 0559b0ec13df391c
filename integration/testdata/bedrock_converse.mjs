// Drives the gateway with the AWS SDK's Bedrock Runtime client
// (@aws-sdk/client-bedrock-runtime), its endpoint set to the gateway: a
// Converse text turn; a Converse tool turn (the fake asks for get_weather);
// the same tool turn streamed; the round trip's last turn (the script's
// toolResult) streamed with ConverseStream; CountTokens of a Converse
// request; a Converse turn signed with SigV4 and fake credentials, the
// gateway key in x-api-key; and a model the gateway does not serve. Then LangChain's ChatBedrockConverse on the same
// client: a text turn, a tool call, the answer to its result streamed.
// Prints one JSON object.
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, CountTokensCommand } from '@aws-sdk/client-bedrock-runtime';

const base = process.env.MODELGATE_BASE;
const apiKey = process.env.MODELGATE_API_KEY;
const modelId = process.env.MODELGATE_MODEL;
const out = {};

// Bearer auth: the gateway key as Bedrock's API key.
const client = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: base, token: { token: apiKey },
  authSchemePreference: ['httpBearerAuth'] });
const text = (content) => content.filter((b) => b.text !== undefined).map((b) => b.text).join('');

const plain = await client.send(new ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'Say hello' }] }],
  inferenceConfig: { maxTokens: 256 } }));
out.text = text(plain.output.message.content);
out.stopReason = plain.stopReason;
out.usage = plain.usage;

const toolConfig = { tools: [{ toolSpec: { name: 'get_weather', description: 'Get the weather for a city',
  inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } } }] };
const messages = [{ role: 'user', content: [{ text: "What's the weather in Oslo?" }] }];
const first = await client.send(new ConverseCommand({ modelId, messages, toolConfig }));
const call = first.output.message.content.find((b) => b.toolUse).toolUse;
out.toolCall = call.name + ' ' + JSON.stringify(call.input);
out.toolStop = first.stopReason;

// The tool turn streamed: the call arrives as contentBlockStart and deltas.
const streamed = await client.send(new ConverseStreamCommand({ modelId, messages, toolConfig }));
const calls = {};
for await (const ev of streamed.stream) {
  if (ev.contentBlockStart?.start?.toolUse) calls[ev.contentBlockStart.contentBlockIndex] = { name: ev.contentBlockStart.start.toolUse.name, input: '' };
  if (ev.contentBlockDelta?.delta?.toolUse) calls[ev.contentBlockDelta.contentBlockIndex].input += ev.contentBlockDelta.delta.toolUse.input;
  if (ev.messageStop) out.streamToolStop = ev.messageStop.stopReason;
}
const sc = Object.values(calls)[0];
out.streamToolCall = sc.name + ' ' + JSON.stringify(JSON.parse(sc.input));

messages.push(first.output.message,
  { role: 'user', content: [{ toolResult: { toolUseId: call.toolUseId, content: [{ text: '12°C and clear in Oslo' }], status: 'success' } }] });
const final = await client.send(new ConverseStreamCommand({ modelId, messages, toolConfig }));
out.final = '';
out.events = [];
for await (const ev of final.stream) {
  const name = Object.keys(ev).find((k) => ev[k] !== undefined);
  if (out.events[out.events.length - 1] !== name) out.events.push(name);
  if (ev.contentBlockDelta?.delta?.text) out.final += ev.contentBlockDelta.delta.text;
  if (ev.metadata) out.streamUsage = ev.metadata.usage;
}

// CountTokens of a Converse request: free, no record.
out.countTokens = (await client.send(new CountTokensCommand({ modelId,
  input: { converse: { messages: [{ role: 'user', content: [{ text: 'How many tokens is this?' }] }] } } }))).inputTokens;

// SigV4 with fake credentials, the gateway key in x-api-key.
const sigv4 = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: base,
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'not-a-secret' } });
sigv4.middlewareStack.add((next) => async (args) => { args.request.headers['x-api-key'] = apiKey; return next(args); },
  { step: 'build', name: 'modelgateKey' });
const signed = await sigv4.send(new ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'Say hello' }] }] }));
out.sigv4Text = text(signed.output.message.content);

try {
  await client.send(new ConverseCommand({ modelId: 'no-such-model', messages: [{ role: 'user', content: [{ text: 'x' }] }] }));
  out.missing = 'answered';
} catch (e) {
  out.missing = e.name + ' ' + (e.$metadata?.httpStatusCode ?? '');
}
// LangChain's ChatBedrockConverse, handed the client.
const { ChatBedrockConverse } = await import('@langchain/aws');
const { HumanMessage, ToolMessage } = await import('@langchain/core/messages');
const lcText = (content) => (typeof content === 'string' ? content : content.map((c) => c.text ?? '').join(''));
const lc = new ChatBedrockConverse({ model: modelId, region: 'us-east-1', client });
out.lcText = lcText((await lc.invoke('Say hello')).content);
const lcTools = lc.bindTools([{ type: 'function', function: { name: 'get_weather', description: 'Get the weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }]);
const lcAsk = new HumanMessage("What's the weather in Oslo?");
const lcCall = await lcTools.invoke([lcAsk]);
out.lcToolCall = lcCall.tool_calls[0].name + ' ' + JSON.stringify(lcCall.tool_calls[0].args);
out.lcFinal = '';
for await (const chunk of await lcTools.stream([lcAsk, lcCall,
  new ToolMessage({ tool_call_id: lcCall.tool_calls[0].id, content: '12°C and clear in Oslo' })])) out.lcFinal += lcText(chunk.content);
console.log(JSON.stringify(out));
