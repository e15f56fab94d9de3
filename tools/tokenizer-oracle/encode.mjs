// tokenizers.js as a command: `node encode.mjs DIR` reads JSONL strings on stdin and writes one JSON
// array of ids per line (no special tokens added), for DIR/tokenizer.json (+ tokenizer_config.json).
// With --bench FILE instead: encodes FILE's lines and prints {"bytes": N, "seconds": S}.
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";
import path from "node:path";

const dir = process.argv[2];
const config_path = path.join(dir, "tokenizer_config.json");
const tokenizer = new Tokenizer(
  JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
  fs.existsSync(config_path) ? JSON.parse(fs.readFileSync(config_path, "utf8")) : {},
);
if (process.argv[3] === "--bench") {
  const lines = fs.readFileSync(process.argv[4], "utf8").split("\n");
  const bytes = Buffer.byteLength(lines.join("\n"));
  for (const line of lines.slice(0, 200)) tokenizer.encode(line, { add_special_tokens: false });  // warm
  const start = process.hrtime.bigint();
  let count = 0;
  for (const line of lines) count += tokenizer.encode(line, { add_special_tokens: false }).ids.length;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(JSON.stringify({ bytes, seconds, tokens: count }));
} else {
  const input = fs.readFileSync(0, "utf8");
  const out = [];
  for (const line of input.split("\n")) {
    if (line.trim()) out.push(JSON.stringify(tokenizer.encode(JSON.parse(line), { add_special_tokens: false }).ids));
  }
  process.stdout.write(out.join("\n") + "\n");
}
