// A client of `dew serve` written with the official OpenAI package: a completion, then a streamed chat.
// Start the server (build/dew serve -m runs/default), then, with the package installed
// (npm install openai, or tools/openai-client/node_modules from the setup):
//   NODE_PATH=tools/openai-client/node_modules node examples/openai_client.mjs http://127.0.0.1:8000/v1 default
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.resolve('tools/openai-client/package.json'));
const { default: OpenAI } = await import(require.resolve('openai'));
const [baseURL = 'http://127.0.0.1:8000/v1', model = 'default'] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: process.env.DEW_API_KEY ?? 'none' });

const completion = await client.completions.create({ model, prompt: 'The jury said', max_tokens: 24, temperature: 0.8, seed: 1 });
console.log('completion:', completion.choices[0].text, `(${completion.usage.completion_tokens} tokens)`);

process.stdout.write('chat: ');
const stream = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'Say something about rivers.' }], max_tokens: 40, stream: true,
}).catch((e) => { console.log(`(no chat: ${e.message})`); return []; });
for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? '');
console.log();
