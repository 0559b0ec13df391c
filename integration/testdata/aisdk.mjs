// Drives the gateway with the Vercel AI SDK's default OpenAI provider,
// which speaks the Responses API with store left at its default (so later
// steps refer to earlier items by id). Prints one JSON object.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText, tool, stepCountIs } from 'ai';
import { z } from 'zod';

const openai = createOpenAI({ baseURL: process.env.MODELGATE_BASE + '/v1', apiKey: process.env.MODELGATE_API_KEY });
const model = openai(process.env.MODELGATE_MODEL);
const weather = tool({
  description: 'Get the weather for a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `12°C and clear in ${city}`,
});

const out = {};
const plain = await generateText({ model, prompt: 'Say hello' });
out.generate = { text: plain.text, finishReason: plain.finishReason, usage: plain.usage };

const withTool = await generateText({ model, prompt: "What's the weather in Oslo?", tools: { get_weather: weather }, stopWhen: stepCountIs(3) });
out.tool = {
  text: withTool.text,
  steps: withTool.steps.length,
  calls: withTool.steps.flatMap((s) => s.toolCalls.map((c) => ({ name: c.toolName, input: c.input }))),
};

const streamed = streamText({ model, prompt: "What's the weather in Oslo?", tools: { get_weather: weather }, stopWhen: stepCountIs(3) });
let text = '';
for await (const delta of streamed.textStream) text += delta;
out.stream = { text, finishReason: await streamed.finishReason, steps: (await streamed.steps).length };
console.log(JSON.stringify(out));
