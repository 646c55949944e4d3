// Generates tests/data/tokenizers/expected.json from node, for machines without Python `tokenizers`.
//   --impl hf     (default) the Hugging Face Rust `tokenizers` core through its official node binding
//                 (npm `tokenizers`): the authority itself; marks the file "generator": "hf-tokenizers".
//                 It cannot switch off special-token parsing, so ids_literal is left out (the Python
//                 generator, gen_tokenizer_expect.py, records it).
//   --impl lenml  the JavaScript port @lenml/tokenizers (a fork of transformers.js); marks the file
//                 "generator": "lenml-js" and lists the strings where that port is known to differ.
// Usage (from the repository root; install the package outside the repo, e.g. in /tmp/hftok or /tmp/tokjs):
//   node tests/tools/gen_tokenizer_expect.mjs --impl hf --modules /tmp/hftok/node_modules \
//     --tokenizers third_party/tokenizers --strings tests/data/tokenizers/strings.json \
//     --out tests/data/tokenizers/expected.json
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const impl = args.impl || "hf";
if (impl !== "hf" && impl !== "lenml") throw new Error(`--impl must be hf or lenml, not ${impl}`);
const modules = args.modules || (impl === "hf" ? "/tmp/hftok/node_modules" : "/tmp/tokjs/node_modules");
const tokDir = args.tokenizers || "third_party/tokenizers";
const stringsPath = args.strings || "tests/data/tokenizers/strings.json";
const outPath = args.out || "tests/data/tokenizers/expected.json";
const require = createRequire(path.resolve(modules) + "/");
const pkg = impl === "hf" ? "tokenizers" : "@lenml/tokenizers";
const lib = require(pkg);
const libVersion = JSON.parse(fs.readFileSync(path.join(modules, pkg, "package.json"), "utf8")).version;

const NAMES = ["llama2", "llama3", "qwen3", "gemma3"];
// Strings where this port is believed to differ from HF tokenizers (the C test reports them, not counts them):
// HF compiles the Split regex with Oniguruma, whose Unicode \s is U+0009-000D, U+0085 and Zl/Zp/Zs;
// JavaScript's \s leaves out U+0085 and takes U+FEFF, so pieces split differently around those two.
const JS_DISAGREEMENTS = [
  { tokenizer: "llama3", string: "ws_semantics", why: "JS regex \\s excludes U+0085 and includes U+FEFF; Oniguruma the reverse" },
  { tokenizer: "qwen3", string: "ws_semantics", why: "JS regex \\s excludes U+0085 and includes U+FEFF; Oniguruma the reverse" },
];
const strings = JSON.parse(fs.readFileSync(stringsPath, "utf8")).strings;
const out = impl === "hf" ? {
  generator: "hf-tokenizers",
  generator_version: `Hugging Face tokenizers (Rust) through npm tokenizers@${libVersion}, node ${process.version}`,
  comment: "Made by tests/tools/gen_tokenizer_expect.mjs --impl hf (the HF Rust core); " +
    "gen_tokenizer_expect.py makes the same plus ids_literal.",
  tokenizers: {},
} : {
  generator: "lenml-js",
  generator_version: `@lenml/tokenizers ${libVersion}, node ${process.version}`,
  comment: "Provisional: made by tests/tools/gen_tokenizer_expect.mjs --impl lenml. Regenerate with " +
    "gen_tokenizer_expect.py or --impl hf (Hugging Face tokenizers, the authority).",
  js_disagreements: JS_DISAGREEMENTS,
  tokenizers: {},
};
for (const name of NAMES) {
  const dir = path.join(tokDir, name);
  let enc, dec;
  if (impl === "hf") {
    const tok = lib.Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
    enc = async (text, add) => Array.from((await tok.encode(text, null, { addSpecialTokens: add })).getIds());
    dec = async (ids, skip) => tok.decode(ids, skip);
  } else {
    const tokenizerJSON = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
    const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
    const tok = lib.TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
    enc = async (text, add) => Array.from(tok.encode(text, { add_special_tokens: add }));
    // transformers.js refuses an empty list; HF decodes it to ""
    dec = async (ids, skip) =>
      ids.length ? tok.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false }) : "";
  }
  const cases = {};
  for (const { name: sname, text } of strings) {
    const ids = await enc(text, false);
    const idsSpecial = await enc(text, true);
    cases[sname] = {
      ids,
      ids_special: idsSpecial,
      decoded: await dec(ids, false),
      decoded_special: await dec(idsSpecial, false),
      decoded_special_skip: await dec(idsSpecial, true),
    };
  }
  out.tokenizers[name] = { cases };
  process.stderr.write(`${name}: ${strings.length} strings\n`);
}
fs.writeFileSync(outPath, JSON.stringify(out, null, 0).replace(/\{"ids"/g, '\n{"ids"') + "\n");
