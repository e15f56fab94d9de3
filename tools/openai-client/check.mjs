// dew serve under the official OpenAI Node client (tests/serve/http_test.cc runs it).
// Usage: node check.mjs BASE_URL API_KEY MODEL api|load
// Prints "ok NAME" or "FAIL NAME: detail" per check; exits 1 when any failed.
import OpenAI from 'openai';

const [baseURL, apiKey, model, mode] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
let failed = 0;
function check(name, condition, detail = '') {
  console.log(condition ? `ok ${name}` : `FAIL ${name}: ${detail}`);
  if (!condition) failed++;
}
async function status(promise) {
  try { await promise; return 200; } catch (e) { return e.status ?? String(e); }
}

async function api() {
  const models = await client.models.list();
  check('models', models.data.length === 1 && models.data[0].id === model, JSON.stringify(models.data));

  const c = await client.completions.create({ model, prompt: 'hello world', max_tokens: 6, temperature: 0, logprobs: 2 });
  check('completion', c.object === 'text_completion' && c.choices.length === 1 && typeof c.choices[0].text === 'string', JSON.stringify(c));
  check('completion usage', c.usage.completion_tokens === 6 && c.usage.total_tokens === c.usage.prompt_tokens + 6, JSON.stringify(c.usage));
  check('completion finish', c.choices[0].finish_reason === 'length', c.choices[0].finish_reason);
  const lp = c.choices[0].logprobs;
  check('completion logprobs', lp.tokens.length === 6 && lp.token_logprobs.every((x) => x <= 0) && lp.top_logprobs.every((t) => Object.keys(t).length >= 1), JSON.stringify(lp));

  const again = await client.completions.create({ model, prompt: 'hello world', max_tokens: 6, temperature: 0 });
  check('greedy is repeatable', again.choices[0].text === c.choices[0].text, `${again.choices[0].text} vs ${c.choices[0].text}`);

  const seeded = { model, prompt: 'the quick', max_tokens: 8, temperature: 1, seed: 7, n: 2 };
  const s1 = await client.completions.create(seeded), s2 = await client.completions.create(seeded);
  check('seeded sampling is repeatable', s1.choices.map((x) => x.text).join('|') === s2.choices.map((x) => x.text).join('|'));

  const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 2 });
  check('chat', chat.object === 'chat.completion' && chat.choices[0].message.role === 'assistant', JSON.stringify(chat));
  check('chat logprobs', chat.choices[0].logprobs.content.length >= 1 && chat.choices[0].logprobs.content[0].top_logprobs.length === 2, JSON.stringify(chat.choices[0].logprobs));

  let streamed = '', chunks = 0, finish = null, usage = null;
  const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, temperature: 0, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      streamed += ch.delta?.content ?? '';
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  check('chat streaming', chunks >= 2 && streamed === chat.choices[0].message.content && finish === 'length', `${JSON.stringify(streamed)} vs ${JSON.stringify(chat.choices[0].message.content)} (${finish})`);
  check('stream usage', usage && usage.completion_tokens === 5, JSON.stringify(usage));

  // A stop string cuts the text before it, never leaving part of it.
  const long = await client.completions.create({ model, prompt: 'hello world', max_tokens: 12, temperature: 0 });
  const text = long.choices[0].text;
  check('a text to cut', text.length >= 4, JSON.stringify(text));
  const stop = text.slice(2, 4);
  const cut = await client.completions.create({ model, prompt: 'hello world', max_tokens: 12, temperature: 0, stop: [stop] });
  check('stop string', cut.choices[0].text === text.slice(0, text.indexOf(stop)) && cut.choices[0].finish_reason === 'stop', `${JSON.stringify(cut.choices[0].text)} from ${JSON.stringify(text)} stop ${JSON.stringify(stop)}`);

  check('unknown model is 400', (await status(client.completions.create({ model: 'nope', prompt: 'x' }))) === 400);
  check('wrong type is 400', (await status(client.completions.create({ model, prompt: 'x', max_tokens: 'many' }))) === 400);
  check('prompt past the context is 400', (await status(client.completions.create({ model, prompt: 'x '.repeat(400), max_tokens: 4 }))) === 400);
  const wrongKey = new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 });
  check('wrong API key is 401', (await status(wrongKey.models.list())) === 401);
}

// 64 concurrent streams, a quarter of them aborted mid-stream; every completed answer equals its solo one.
async function load() {
  const prompts = Array.from({ length: 16 }, (_, i) => `prompt ${i} hello`);
  const solo = [];
  for (const p of prompts) solo.push((await client.completions.create({ model, prompt: p, max_tokens: 24, temperature: 0 })).choices[0].text);
  let completed = 0, aborted = 0, mismatched = 0;
  await Promise.all(Array.from({ length: 64 }, async (_, i) => {
    const controller = new AbortController();
    const abort = i % 4 === 3;
    try {
      const stream = await client.completions.create({ model, prompt: prompts[i % 16], max_tokens: 24, temperature: 0, stream: true }, { signal: controller.signal });
      let text = '', n = 0;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.text ?? '';
        if (abort && ++n === 3) controller.abort();
      }
      // An aborted stream may end quietly rather than throw.
      if (controller.signal.aborted) aborted++;
      else completed++, mismatched += text !== solo[i % 16];
    } catch (e) {
      if (controller.signal.aborted) aborted++; else throw e;
    }
  }));
  check('load: every stream ended', completed === 48 && aborted === 16, `${completed} completed, ${aborted} aborted`);
  check('load: completed answers equal their solo answers', mismatched === 0, `${mismatched} differ`);
}

try {
  if (mode === 'api') await api(); else await load();
} catch (e) {
  check('no exception', false, e.stack ?? String(e));
}
process.exit(failed ? 1 : 0);
