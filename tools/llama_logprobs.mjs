// llama.cpp's log-probabilities for a GGUF file, through the prebuilt
// library of npm node-llama-cpp (no build, CPU only):
//
//   node tools/llama_logprobs.mjs ID,ID,... MODEL.gguf OUT.bin [MODEL.gguf OUT.bin ...]
//
// VOCAB=N gives the number of embedding rows when the file's tensor
// table is not at hand. Writes, for each model, T x vocab float64 values: log p(next token | tokens so far) after
// each input token, -Infinity where llama.cpp reports no probability.
// The KV cache is f32 and flash attention off, so the only differences from
// an exact forward pass are llama.cpp's own arithmetic (it rounds
// activations to 8 bits for quantized weights).
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { writeFileSync } from "node:fs";

const [idList, ...pairs] = process.argv.slice(2);
if (!idList || pairs.length < 2 || pairs.length % 2) {
    console.error("usage: node tools/llama_logprobs.mjs ID,ID,... MODEL.gguf OUT.bin [MODEL.gguf OUT.bin ...]");
    process.exit(2);
}
const ids = idList.split(",").map(Number);
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
for (let i = 0; i < pairs.length; i += 2) {
    const [modelPath, outPath] = [pairs[i], pairs[i + 1]];
    const model = await llama.loadModel({ modelPath });
    const context = await model.createContext({
        contextSize: Math.max(64, ids.length + 8),
        flashAttention: false,
        experimentalKvCacheKeyType: "F32",
        experimentalKvCacheValueType: "F32",
    });
    const vocab = Number(process.env.VOCAB || model.fileInsights.tensorInfo?.find((t) => t.name === "token_embd.weight")?.dimensions[1]);
    if (!(vocab > 0)) throw new Error(`${modelPath}: vocabulary size unknown; set VOCAB`);
    const seq = context.getSequence();
    const out = await seq.controlledEvaluate(ids.map((id) => [id, { generateNext: { probabilities: true } }]));
    const buf = new Float64Array(ids.length * vocab).fill(-Infinity);
    out.forEach((o, t) => {
        for (const [tok, p] of o.next.probabilities) if (p > 0 && tok < vocab) buf[t * vocab + tok] = Math.log(p);
    });
    writeFileSync(outPath, Buffer.from(buf.buffer));
    console.log(`${modelPath}: loaded by llama.cpp, ${ids.length} positions x ${vocab} log-probabilities`);
    await context.dispose();
    await model.dispose();
}
