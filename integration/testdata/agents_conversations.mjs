// Runs the OpenAI Agents SDK against the gateway with an
// OpenAIConversationsSession: two turns of one agent share the session,
// then the session's items are read, one popped, and the session cleared.
// Prints a JSON summary on stdout.
import OpenAI from 'openai';
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, OpenAIConversationsSession } from '@openai/agents';

setTracingDisabled(true);
const client = new OpenAI({ apiKey: process.env.MODELGATE_API_KEY, baseURL: process.env.MODELGATE_BASE + '/v1' });
setDefaultOpenAIClient(client);

const session = new OpenAIConversationsSession({ client });
const agent = new Agent({ name: 'Assistant', instructions: 'Answer briefly.', model: process.env.MODELGATE_MODEL });
const first = await run(agent, 'Remember: the code word is heron.', { session });
const second = await run(agent, 'What was the code word?', { session });
const conversationId = await session.getSessionId();
const items = await session.getItems();
const popped = await session.popItem();
const afterPop = await session.getItems();
await session.clearSession();
let goneStatus = 0;
try {
  await client.conversations.retrieve(conversationId);
} catch (e) {
  goneStatus = e.status ?? -1;
}
const text = (it) => (Array.isArray(it.content) ? it.content.map((c) => c.text ?? '').join('') : String(it.content ?? ''));
console.log(JSON.stringify({
  conversationId,
  first: first.finalOutput,
  second: second.finalOutput,
  items: items.map(text),
  popped: popped ? text(popped) : null,
  afterPop: afterPop.length,
  goneStatus,
}));
