// tests/server/openai_client.js — drives ./run serve with the official
// OpenAI client from npm, exactly as an application would.
//
//   node tests/server/openai_client.js BASE_URL EXPECTED.json
//
// EXPECTED.json is `./run models/tiny "Hi" --no-gen-config -n 20 -t 0.8 -k 40 -s 7 --json`'s
// output: the server must produce the same text for the same settings, both
// as one answer and as a stream. Prints one line per check; exit 1 on the
// first failure.
const path = require('path');
const fs = require('fs');
const OpenAI = require(path.join(__dirname, '..', '..', 'tools', 'node_modules', 'openai'));

const [baseURL, expectedFile] = process.argv.slice(2);
const expected = JSON.parse(fs.readFileSync(expectedFile, 'utf8'));
const client = new OpenAI({ baseURL, apiKey: 'not-needed', maxRetries: 0, timeout: 60000 });

function check(ok, what, detail) {
    if (!ok) {
        console.log(`FAIL ${what}${detail ? ': ' + detail : ''}`);
        process.exit(1);
    }
    console.log(`ok   ${what}`);
}

// The CLI's settings, written out (its defaults differ from the API's).
const request = {
    model: '',  // the id /v1/models gives
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 20,
    temperature: 0.8,
    top_k: 40,
    top_p: 1,
    seed: 7,
};

async function main() {
    const models = await client.models.list();
    check(models.data.length === 1 && typeof models.data[0].id === 'string', 'models.list() lists one model',
          JSON.stringify(models.data));
    request.model = models.data[0].id;

    // A model the server does not have: 404 with OpenAI's error object,
    // which the client raises as NotFoundError.
    let missing = null;
    try {
        await client.chat.completions.create({ ...request, model: 'gpt-4o' });
    } catch (e) {
        missing = e;
    }
    check(missing instanceof OpenAI.NotFoundError && missing.status === 404 && missing.code === 'model_not_found' &&
          missing.param === 'model', 'an unknown model: NotFoundError, 404, code model_not_found',
          missing && JSON.stringify({ status: missing.status, code: missing.code, message: missing.message }));

    const answer = await client.chat.completions.create(request);
    const text = answer.choices[0].message.content;
    check(answer.object === 'chat.completion' && answer.choices[0].message.role === 'assistant',
          'chat.completions.create: a chat.completion with an assistant message');
    check(text === expected.text, 'non-streaming text equals ./run\'s', JSON.stringify({ server: text, cli: expected.text }));
    check(answer.choices[0].finish_reason === 'length', 'finish_reason is "length" after max_tokens',
          answer.choices[0].finish_reason);
    const u = answer.usage;
    check(u.prompt_tokens === expected.prompt_tokens && u.completion_tokens === expected.generated_tokens &&
          u.total_tokens === u.prompt_tokens + u.completion_tokens, 'usage counts equal the CLI\'s', JSON.stringify(u));

    const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    let streamed = '', pieces = 0, finish = null, usage = null;
    for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        if (!chunk.choices.length) continue;
        const c = chunk.choices[0];
        if (c.delta && c.delta.content) { streamed += c.delta.content; pieces++; }
        if (c.finish_reason) finish = c.finish_reason;
    }
    check(streamed === text, 'streamed deltas add up to the same text', JSON.stringify({ streamed, text }));
    check(pieces >= 1, `the text came in ${pieces} pieces`);
    check(finish === 'length', 'the last chunk says finish_reason "length"', finish);
    check(usage && usage.completion_tokens === 20, 'stream_options.include_usage adds a usage chunk', JSON.stringify(usage));

    // A stop string ends the answer early and is not part of it.
    const cut = expected.text.slice(8, 12);
    const stopped = await client.chat.completions.create({ ...request, stop: [cut] });
    const want = expected.text.slice(0, expected.text.indexOf(cut));
    check(stopped.choices[0].message.content === want && stopped.choices[0].finish_reason === 'stop',
          `stop: ${JSON.stringify(cut)} cuts the text there, finish_reason "stop"`, JSON.stringify(stopped.choices[0]));

    const completion = await client.completions.create({ model: request.model, prompt: 'In the beginning', max_tokens: 5, temperature: 0 });
    check(completion.object === 'text_completion' && typeof completion.choices[0].text === 'string' &&
          completion.usage.completion_tokens === 5, 'completions.create (raw prompt) answers', JSON.stringify(completion));

    // The client turns an error answer into an exception with its fields.
    try {
        await client.chat.completions.create({ ...request, temperature: -1 });
        check(false, 'temperature -1 is refused');
    } catch (e) {
        check(e.status === 400 && e.param === 'temperature' && e.type === 'invalid_request_error',
              'temperature -1: a 400 the client reads as an APIError (param "temperature")', `${e.status} ${e.param} ${e.message}`);
    }
}

main().catch((e) => {
    console.log(`FAIL unexpected error: ${e.stack || e}`);
    process.exit(1);
});
