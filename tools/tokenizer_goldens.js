#!/usr/bin/env node
// tokenizer_goldens.js — the reference side of Lantern's tokenizer tests.
//
// Runs Hugging Face's own `tokenizers` library (npm) on a corpus of cases and
// writes what it produces, so the C++ tests can compare without node:
//
//   node tools/tokenizer_goldens.js                 regenerate tests/data/tokenizer/goldens.json
//   node tools/tokenizer_goldens.js --bench-text F  write the ~1 MB mixed text the bench encodes
//   node tools/tokenizer_goldens.js --bench F [IDS] time the reference encoding file F;
//                                                   with IDS, also compare with those ids
//
// The corpus is tests/data/tokenizer/cases.json (hand-written cases, by
// group) plus the generated cases below (whitespace x context, contractions x
// case, digits x context, long inputs). Options: --tokenizer PATH (default
// models/qwen-tokenizer/tokenizer.json).
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('./node_modules/tokenizers');

const root = path.join(__dirname, '..');
const args = process.argv.slice(2);
const opt = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
};
const tokenizerPath = opt('--tokenizer', path.join(root, 'models/qwen-tokenizer/tokenizer.json'));
const casesPath = path.join(root, 'tests/data/tokenizer/cases.json');
const goldensPath = path.join(root, 'tests/data/tokenizer/goldens.json');

// A small deterministic generator, so generated cases and the bench text are
// the same on every machine.
function lcg(seed) {
    let s = seed >>> 0;
    return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
}

function generatedCases(handWritten) {
    const out = [];
    const add = (group, text) => out.push({ group, text });
    // Whitespace that is \s (U+0085, U+00A0, U+3000, U+2028, U+1680, tab, ...)
    // and that is not (U+FEFF, U+200B, U+180E), in the contexts where the
    // regex's whitespace alternatives differ.
    const spaces = ['\t', '\u001c', '\u001f', '\u000b', '\u000c', '\r', '\u0085', '\u00a0', '\u1680', '\u180e', '\u2002', '\u2009',
        '\u200b', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff'];
    const contexts = ['a{w}b', 'a{w}{w}b', 'a {w}b', 'a{w} b', '{w}', '{w}{w}', 'a{w}', '{w}a', '1{w}2', '!{w}!', 'a{w}\nb', 'a {w}\n'];
    for (const w of spaces) for (const c of contexts) add('whitespace-matrix', c.split('{w}').join(w));
    // The contractions, in every case, where the regex meets them.
    for (const c of ['s', 't', 're', 've', 'm', 'll', 'd']) {
        const variants = [c, c.toUpperCase(), c[0].toUpperCase() + c.slice(1)];
        if (c.length === 2) variants.push(c[0] + c[1].toUpperCase());
        for (const v of variants) for (const ctx of ["I'{c}", " '{c}", "x'{c}y", "'{c}'{c}"]) add('contractions-matrix', ctx.split('{c}').join(v));
    }
    // Digits and other numbers (\p{N}: Nd, Nl, No), one per token.
    for (const d of ['7', '٣', '१', '৩', '７', '½', '²', 'Ⅻ', '①', 'ↁ', '𝟙', '⁴', '₅', '〇', '፩', '𐄇'])
        for (const ctx of ['a{d}b', '{d}{d}{d}', ' {d}', '{d}x']) add('digits-matrix', ctx.split('{d}').join(d));
    // Long inputs: a 500-character word, long runs, and a 20 KB paragraph
    // stitched from the hand-written cases.
    const rnd = lcg(42);
    let word = '';
    for (let i = 0; i < 500; i++) word += String.fromCharCode(97 + Math.floor(rnd() * 26));
    add('long', word);
    add('long', 'a'.repeat(500));
    add('long', 'é'.repeat(500));
    add('long', '9'.repeat(500));
    add('long', ' '.repeat(500) + 'x');
    add('long', '\n'.repeat(500));
    add('long', 'ab '.repeat(300));
    let para = '';
    while (para.length < 20000) para += handWritten[Math.floor(rnd() * handWritten.length)].text + (rnd() < 0.2 ? '\n' : ' ');
    add('long', para);
    return out;
}

function loadCases() {
    const hand = JSON.parse(fs.readFileSync(casesPath, 'utf8'));
    return hand.concat(generatedCases(hand));
}

async function writeGoldens(tok) {
    const cases = loadCases();
    const lines = [];
    let notNfc = 0;
    for (const c of cases) {
        const enc = await tok.encode(c.text, null, { addSpecialTokens: false });
        const ids = enc.getIds();
        const decoded = await tok.decode(ids, false);
        // decode(encode(x)) should be NFC(x); flag (and count) any case where not.
        const roundtrip = decoded === c.text.normalize('NFC');
        if (!roundtrip) { notNfc++; console.error('decode(encode(x)) != NFC(x):', JSON.stringify(c.text)); }
        lines.push(JSON.stringify({ group: c.group, text: c.text, ids, decoded }));
    }
    fs.writeFileSync(goldensPath, '[\n' + lines.join(',\n') + '\n]\n');
    console.log(`wrote ${cases.length} cases to ${path.relative(root, goldensPath)} (${notNfc} not round-tripping to NFC)`);
}

// ~1 MB of mixed text: the corpus's cases in a shuffled order, repeated.
function writeBenchText(file) {
    const cases = loadCases().filter((c) => c.group !== 'long');
    const rnd = lcg(7);
    const parts = [];
    let size = 0;
    while (size < 1 << 20) {
        const t = cases[Math.floor(rnd() * cases.length)].text + (rnd() < 0.15 ? '\n\n' : ' ');
        parts.push(t);
        size += Buffer.byteLength(t);
    }
    fs.writeFileSync(file, parts.join(''));
    console.log(`wrote ${size} bytes of mixed text to ${file}`);
}

async function bench(tok, file, idsFile) {
    const text = fs.readFileSync(file, 'utf8');
    const bytes = Buffer.byteLength(text);
    await tok.encode('warm up', null, { addSpecialTokens: false });
    let wall = Infinity, cpu = Infinity, ids = null;
    for (let run = 0; run < 3; run++) {
        const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
        const enc = await tok.encode(text, null, { addSpecialTokens: false });
        const c = process.cpuUsage(c0);
        wall = Math.min(wall, Number(process.hrtime.bigint() - t0) / 1e9);
        cpu = Math.min(cpu, (c.user + c.system) / 1e6);
        ids = enc.getIds();
    }
    const version = require('./node_modules/tokenizers/package.json').version;
    console.log(`reference (HF tokenizers ${version}): ${bytes} bytes -> ${ids.length} tokens, best of 3: ` +
        `${(wall * 1e3).toFixed(1)} ms = ${(bytes / wall / 1e6).toFixed(2)} MB/s, cpu ${(cpu * 1e3).toFixed(1)} ms = ${(bytes / cpu / 1e6).toFixed(2)} MB/s`);
    if (idsFile) {
        const ours = fs.readFileSync(idsFile, 'utf8').trim().split(/\s+/).filter((s) => s.length).map(Number);
        const same = ours.length === ids.length && ours.every((v, i) => v === ids[i]);
        console.log(`ids identical to Lantern's: ${same ? 'yes' : 'NO'}`);
        if (!same) process.exitCode = 1;
    }
}

(async () => {
    if (!fs.existsSync(tokenizerPath)) { console.error(`missing ${tokenizerPath} (run make deps)`); process.exit(1); }
    const tok = Tokenizer.fromFile(tokenizerPath);
    if (args.includes('--bench-text')) writeBenchText(opt('--bench-text'));
    else if (args.includes('--bench')) { const i = args.indexOf('--bench'); await bench(tok, args[i + 1], args[i + 2] && !args[i + 2].startsWith('--') ? args[i + 2] : null); }
    else await writeGoldens(tok);
})();
