// tests/server/concurrent.js — eight clients at once, and clients that
// misbehave in between.
//
//   node tests/server/concurrent.js BASE_URL
//
// Each of eight requests (different prompts and seeds, half of them
// streamed) is first sent alone; then all eight go at once, together with
// two streams that hang up after their first piece and one malformed body.
// The server queues them and runs one at a time, so each of the eight must
// get exactly the answer it got alone. Exit 1 on the first failure.
const path = require('path');
const OpenAI = require(path.join(__dirname, '..', '..', 'tools', 'node_modules', 'openai'));

const baseURL = process.argv[2];
const client = new OpenAI({ baseURL, apiKey: 'not-needed', maxRetries: 0, timeout: 120000 });

function check(ok, what, detail) {
    if (!ok) {
        console.log(`FAIL ${what}${detail ? ': ' + detail : ''}`);
        process.exit(1);
    }
    console.log(`ok   ${what}`);
}

let modelId = '';  // what /v1/models lists, read first
const requests = [];
for (let i = 0; i < 8; i++) {
    requests.push({
        messages: [{ role: 'user', content: `Question number ${i}` }],
        max_tokens: 12,
        temperature: 0.9,
        top_k: 40,
        seed: 100 + i,
        stream: i % 2 === 1,
    });
}

// The text of one request, streamed or not.
async function ask(req) {
    if (!req.stream) {
        const a = await client.chat.completions.create(req);
        return a.choices[0].message.content;
    }
    let text = '';
    for await (const chunk of await client.chat.completions.create(req)) {
        if (chunk.choices.length && chunk.choices[0].delta.content) text += chunk.choices[0].delta.content;
    }
    return text;
}

// A stream whose client leaves after the first piece of text: breaking out
// of the loop closes the connection while the server is still generating.
async function hang_up() {
    const s = await client.chat.completions.create({
        model: modelId, messages: [{ role: 'user', content: 'a long answer please' }],
        max_tokens: 400, temperature: 1, seed: 1, stream: true,
    });
    for await (const chunk of s) {
        if (chunk.choices.length && chunk.choices[0].delta.content) break;
    }
    return 'hung up';
}

async function malformed() {
    const r = await fetch(`${baseURL}/chat/completions`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"messages": [',
    });
    const body = await r.json();
    return `${r.status} ${body.error && body.error.code}`;
}

async function main() {
    modelId = (await client.models.list()).data[0].id;
    for (const r of requests) r.model = modelId;
    const alone = [];
    for (const r of requests) alone.push(await ask(r));
    check(alone.every((t) => t.length > 0), 'eight requests answered one by one');
    check(new Set(alone).size === 8, 'different seeds and prompts gave eight different answers');

    const jobs = [hang_up(), ...requests.slice(0, 4).map(ask), malformed(), hang_up(), ...requests.slice(4).map(ask)];
    const t0 = Date.now();
    const results = await Promise.all(jobs);
    const together = [...results.slice(1, 5), ...results.slice(7)];
    console.log(`     (all at once took ${Date.now() - t0} ms)`);
    for (let i = 0; i < 8; i++)
        check(together[i] === alone[i], `request ${i} (${requests[i].stream ? 'streamed' : 'one answer'}) got the same text as alone`,
              JSON.stringify({ together: together[i], alone: alone[i] }));
    check(results[5] === '400 invalid_json', 'the malformed body in between got 400 invalid_json', results[5]);
    check(results[0] === 'hung up' && results[6] === 'hung up', 'two clients hung up mid-stream');

    const after = await ask(requests[0]);
    check(after === alone[0], 'the server still answers correctly afterwards');
}

main().catch((e) => {
    console.log(`FAIL unexpected error: ${e.stack || e}`);
    process.exit(1);
});
