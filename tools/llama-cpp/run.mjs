// llama.cpp on a GGUF file through node-llama-cpp's prebuilt CPU binaries; one JSON line on stdout.
//   node run.mjs MODEL.gguf speed PROMPT_TOKENS NEW_TOKENS THREADS VOCAB_SIZE
//     prefill and greedy decode tokens/s (the KV cache in llama.cpp's default f16), after a warm-up pass
//   node run.mjs MODEL.gguf logits ID,ID,...
//     the logits after each prefix of the ids (f32 KV cache): a row per position, every id's
//   node run.mjs MODEL.gguf tokenize TEXTS.json
//     llama.cpp's ids for each text of a JSON array (no BOS added, special tokens' text as text)
// Run as a file, not with `node -e`: the binary test forks a child that inherits node's flags.
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const version = JSON.parse(readFileSync(new URL("./node_modules/node-llama-cpp/package.json", import.meta.url))).version;

const [modelPath, mode, ...rest] = process.argv.slice(2);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath});

async function speed(promptTokens, newTokens, threads, vocabSize) {
  // Threads given explicitly: left to its default on 2 vCPUs, its busy-waiting threads fight each other.
  const context = await model.createContext({contextSize: promptTokens + newTokens + 8, batchSize: promptTokens,
                                             threads});  // flash attention: llama.cpp's default ("auto")
  const prompt = Array.from({length: promptTokens}, (_, t) => (t * 7919) % vocabSize);
  let prefill = 0, decode = 0;
  for (let pass = 0; pass < 2; ++pass) {  // the first pass warms up; the second is timed
    const sequence = context.getSequence();
    let start = performance.now();
    await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
    const first = await sequence.controlledEvaluate([[prompt.at(-1), {generateNext: {token: true}}]]);
    prefill = (performance.now() - start) / 1000;
    let next = first.at(-1).next.token, made = 0;
    start = performance.now();
    for await (const token of sequence.evaluate([next], {temperature: 0})) {
      if (++made === newTokens) break;
    }
    decode = (performance.now() - start) / 1000;
    sequence.dispose();
  }
  await context.dispose();
  return {threads, prefill_tokens_per_s: promptTokens / prefill, decode_tokens_per_s: newTokens / decode};
}

async function logits(ids) {
  const context = await model.createContext({contextSize: ids.length + 8, batchSize: ids.length, threads: 2,
                                             experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
                                             flashAttention: false});  // its CPU flash attention rounds through f16
  const sequence = context.getSequence();
  const out = await sequence.controlledEvaluate(ids.map(id => [id, {generateNext: {logits: true}}]));
  const rows = out.map(item => {
    const row = [];
    for (const [id, logit] of item.next.logits) row[id] = logit;
    return row;
  });
  await context.dispose();
  return {logits: rows};
}

const result = mode === "speed" ? await speed(...rest.slice(0, 4).map(Number))
             : mode === "logits" ? await logits(rest[0].split(",").map(Number))
             : {ids: JSON.parse(readFileSync(rest[0], "utf8")).map(text => model.tokenize(text, false))};
console.log(JSON.stringify({llama_cpp: "node-llama-cpp " + version, ...result}));
await model.dispose();
