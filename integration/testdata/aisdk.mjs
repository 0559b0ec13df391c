// Drives the gateway with a Vercel AI SDK provider (MODELGATE_PROVIDER):
// openai, the default OpenAI provider, which speaks the Responses API with
// store left at its default (so later steps refer to earlier items by id);
// or bedrock, the Amazon Bedrock provider, which speaks Converse and
// ConverseStream, the gateway key as its Bedrock API key. Prints one JSON
// object.
import { createOpenAI } from '@ai-sdk/openai';
import { createAmazonBedrock } from '@ai-sdk/amazon-bedrock';
import { generateText, streamText, tool, stepCountIs } from 'ai';
import { z } from 'zod';

const base = process.env.MODELGATE_BASE;
const apiKey = process.env.MODELGATE_API_KEY;
const provider = process.env.MODELGATE_PROVIDER === 'bedrock'
  ? createAmazonBedrock({ baseURL: base, apiKey, region: 'us-east-1' })
  : createOpenAI({ baseURL: base + '/v1', apiKey });
const model = provider(process.env.MODELGATE_MODEL);
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
