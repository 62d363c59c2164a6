#!/usr/bin/env node
// A byte-level BPE trainer that writes a tokenizer.json in the same format as Qwen's.
//
//   node tools/train_tokenizer.js train CORPUS OUT_DIR [VOCAB]   (default VOCAB 4096)
//   node tools/train_tokenizer.js encode TOKENIZER_JSON DOCS_JSON OUT_BIN
//
// train: learns VOCAB - 256 - 3 merges on the training verses of CORPUS (one verse per line;
// every 20th verse is held out for validation, as in tools/train.py) and writes
// OUT_DIR/tokenizer.json: ids 0-255 are the 256 byte symbols in the same order as Qwen's
// vocabulary, then one id per merge, then the ChatML special tokens <|endoftext|>,
// <|im_start|>, <|im_end|> as the last three ids. Normalizer (NFC), pre-tokenizer (the Split
// regex + ByteLevel), post-processor and decoder are copied from Qwen's tokenizer.json so any
// Qwen tokenizer implementation (Lantern's, Hugging Face's) loads it unchanged.
//
// encode: encodes a JSON array of strings with Hugging Face's `tokenizers` (npm) -- the
// reference implementation, special tokens included -- and writes, per string, a uint32
// little-endian count followed by that many uint16 ids. tools/train.py uses it.
'use strict';
const fs = require('fs');
const path = require('path');

const QWEN_TOKENIZER = path.join(__dirname, '..', 'models', 'qwen-tokenizer', 'tokenizer.json');
const SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
const VAL_EVERY = 20; // verse i is validation when i % 20 == 19 (same rule as tools/train.py)

// GPT-2's byte -> printable character map: printable Latin-1 bytes map to themselves, the
// other 68 bytes to U+0100 onwards. Listing the printable ones first gives Qwen's id order.
function byteLevelOrder() {
  const bytes = [];
  for (let b = 33; b <= 126; b++) bytes.push(b);
  for (let b = 161; b <= 172; b++) bytes.push(b);
  for (let b = 174; b <= 255; b++) bytes.push(b);
  const chars = bytes.map((b) => String.fromCodePoint(b));
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bytes.includes(b)) { bytes.push(b); chars.push(String.fromCodePoint(256 + n)); n++; }
  }
  return { bytes, chars }; // id i is byte bytes[i], written as chars[i]
}

// Qwen's split regex, rewritten for JavaScript, which (in Node 20) lacks the inline (?i:...)
// group: the case-insensitive contractions are spelled out letter by letter. The rest is
// unchanged. (For non-ASCII text Rust's case folding and \s differ in corner cases, e.g. the
// long s; the KJV corpus is pure ASCII.)
const SPLIT_RE = new RegExp(
  "'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])" +
  '|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+',
  'gu');

function train(corpusPath, outDir, vocabSize) {
  const qwen = JSON.parse(fs.readFileSync(QWEN_TOKENIZER, 'utf8'));
  const { bytes, chars } = byteLevelOrder();
  // Check the byte order against Qwen's own vocabulary rather than trusting it.
  for (let i = 0; i < 256; i++) {
    if (qwen.model.vocab[chars[i]] !== i) throw new Error('byte order differs from Qwen at id ' + i);
  }
  const byteChar = new Array(256);
  bytes.forEach((b, i) => { byteChar[b] = chars[i]; });

  const verses = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l.length);
  const text = verses.filter((_, i) => i % VAL_EVERY !== VAL_EVERY - 1).join('\n').normalize('NFC') + '\n';

  // 1. Count pre-tokens ("words"); BPE never merges across them.
  const counts = new Map();
  for (const m of text.matchAll(SPLIT_RE)) counts.set(m[0], (counts.get(m[0]) || 0) + 1);

  // 2. Each word becomes a list of symbol ids, starting from its UTF-8 bytes.
  const idOf = new Map(chars.map((c, i) => [c, i]));
  const symbols = chars.slice(); // id -> string in the byte-level alphabet
  const words = [], freq = [];
  for (const [w, c] of counts) {
    words.push(Array.from(Buffer.from(w, 'utf8'), (b) => idOf.get(byteChar[b])));
    freq.push(c);
  }

  // 3. Pair statistics: how often each adjacent pair occurs, and in which words.
  const key = (a, b) => a * 65536 + b;
  const pairCount = new Map(), pairWords = new Map();
  const addPairs = (wi, sign) => {
    const w = words[wi];
    for (let j = 0; j + 1 < w.length; j++) {
      const k = key(w[j], w[j + 1]);
      pairCount.set(k, (pairCount.get(k) || 0) + sign * freq[wi]);
      if (sign > 0) { if (!pairWords.has(k)) pairWords.set(k, new Set()); pairWords.get(k).add(wi); }
    }
  };
  for (let i = 0; i < words.length; i++) addPairs(i, +1);

  // 4. Greedy merges: always the most frequent pair (ties: the smaller pair of strings).
  const merges = [];
  const nMerges = vocabSize - 256 - SPECIALS.length;
  while (merges.length < nMerges) {
    let best = -1, bestN = 0;
    for (const [k, n] of pairCount) {
      if (n > bestN || (n === bestN && n > 0 && pairLess(k, best))) { best = k; bestN = n; }
    }
    if (bestN < 2) break; // nothing left worth merging
    const a = Math.floor(best / 65536), b = best % 65536;
    const id = symbols.length;
    symbols.push(symbols[a] + symbols[b]);
    merges.push([symbols[a], symbols[b]]);
    for (const wi of pairWords.get(best)) {
      const w = words[wi];
      addPairs(wi, -1);
      const out = [];
      for (let j = 0; j < w.length; j++) {
        if (j + 1 < w.length && w[j] === a && w[j + 1] === b) { out.push(id); j++; } else out.push(w[j]);
      }
      words[wi] = out;
      addPairs(wi, +1);
    }
    pairCount.delete(best);
    pairWords.delete(best);
  }
  function pairLess(k1, k2) {
    const s = (k) => symbols[Math.floor(k / 65536)] + ' ' + symbols[k % 65536];
    return k2 < 0 || s(k1) < s(k2);
  }

  // 5. Write tokenizer.json: Qwen's structure with our vocabulary, merges and specials.
  const vocab = {};
  symbols.forEach((s, i) => { vocab[s] = i; });
  const added = SPECIALS.map((content, i) => ({
    id: symbols.length + i, content, single_word: false, lstrip: false, rstrip: false,
    normalized: false, special: true,
  }));
  const tok = {
    version: qwen.version, truncation: null, padding: null, added_tokens: added,
    normalizer: qwen.normalizer, pre_tokenizer: qwen.pre_tokenizer,
    post_processor: qwen.post_processor, decoder: qwen.decoder,
    model: Object.assign({}, qwen.model, { vocab, merges }),
  };
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'tokenizer.json'), JSON.stringify(tok, null, 1) + '\n');
  const total = symbols.length + SPECIALS.length;
  console.log(`tokenizer: ${counts.size} distinct pre-tokens, ${merges.length} merges, ` +
              `vocab ${total} (specials ${added.map((t) => t.id).join(',')})`);
  if (total !== vocabSize) console.log(`tokenizer: warning: asked for ${vocabSize}, got ${total}`);
}

async function encode(tokPath, docsPath, outPath) {
  const { Tokenizer } = require('tokenizers');
  const tok = Tokenizer.fromFile(tokPath);
  const docs = JSON.parse(fs.readFileSync(docsPath, 'utf8'));
  const parts = [];
  const BATCH = 256;
  for (let i = 0; i < docs.length; i += BATCH) {
    const encs = await tok.encodeBatch(docs.slice(i, i + BATCH));
    for (const e of encs) {
      const ids = e.getIds();
      const head = Buffer.alloc(4);
      head.writeUInt32LE(ids.length);
      const body = Buffer.alloc(2 * ids.length);
      ids.forEach((id, j) => body.writeUInt16LE(id, 2 * j));
      parts.push(head, body);
    }
  }
  fs.writeFileSync(outPath, Buffer.concat(parts));
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'train' && args.length >= 2) {
  train(args[0], args[1], parseInt(args[2] || '4096', 10));
} else if (cmd === 'encode' && args.length === 3) {
  encode(...args).catch((e) => { console.error(e); process.exit(1); });
} else {
  console.error('usage: train_tokenizer.js train CORPUS OUT_DIR [VOCAB]\n' +
                '       train_tokenizer.js encode TOKENIZER_JSON DOCS_JSON OUT_BIN');
  process.exit(2);
}
