// bench_depth.cpp — `./run bench --depth 0,1024,4096`: decode after a long
// context, beside llama.cpp's `llama-bench -d` (book/12-performance.md).
//
// A decode step reads every weight once, and now also the cached keys and
// values of every earlier position: 2 x layers x depth x kv_dim values. At
// depth 4,096 on the 0.5B shape that is 50 MB of f16 cache beside about a
// GB of bf16 weights, 5% more bytes: if decode is bound by memory, it
// should keep about 95% of its short-context speed. So each row says the
// bytes a token reads at that depth, the speed those bytes allow at the
// measured bandwidth (the limit), the share of it reached, and the speed
// against the short context's (the faster of the depths up to 1,024, as
// both engines decode a little faster at 1,024 than at 0). Where a row
// falls far below its limit, attention's own work sets the pace: the
// `attn ms` column is the time per token in attention (KernelScratch's
// clock, kernels.h), `mat ms` in the weight products.
//
// Per depth and rep: Lantern prefills `depth` random tokens in one forward
// (timed: pp<depth>), decodes --decode tokens after them (timed: tg), then
// llama-bench runs the same two tests (-p depth -n 0, and -p 0 -n N -d
// depth) on the same weights and cache type. Medians of --reps.
#include <algorithm>
#include <cstdio>
#include <memory>
#include "cpu/bench.h"
#include "cpu/roofline.h"
#include "kernels.h"
#include "model.h"
#include "net.h"
#include "sampler.h"

void bench_depth(const DepthBench& b, nlohmann::ordered_json& rows) {
    const Model& m = *b.model;
    const Config& c = m.cfg;
    int max_depth = *std::max_element(b.depths.begin(), b.depths.end());
    int ctx = max_depth + b.n_decode + 1;
    if (ctx > c.max_pos) fail("--depth %d: with --decode %d it needs %d positions; the model has %d", max_depth, b.n_decode, ctx, c.max_pos);
    Net net;
    net_init(net, m, ctx, b.kv_type);
    std::vector<int> tokens(ctx);
    uint32_t s = 4242;
    for (int& t : tokens) t = (int)((s = s * 1664525u + 1013904223u) >> 8) % c.vocab;
    size_t cache_row = kv_row_bytes(net.kv.type, net.kv.kv_dim);  // one position of one layer, keys or values

    struct Depth {
        std::vector<double> pp, tg, attn_ms, mat_ms, llama_pp, llama_tg;
    };
    std::vector<Depth> d(b.depths.size());
    forward(net, tokens.data(), 1, 0, false);  // touches every weight once: page faults are not timed
    KernelScratch& ks = kernel_scratch();
    for (int r = 0; r < b.reps; r++)
        for (size_t i = 0; i < b.depths.size(); i++) {
            int depth = b.depths[i];
            net_reset(net);
            int next = 0;
            if (depth > 0) {
                double t0 = now_s();
                next = sample_argmax(forward(net, tokens.data(), depth, 0, false), c.vocab);
                d[i].pp.push_back(depth / (now_s() - t0));
            }
            ks.timed = true;
            ks.matmul_s = ks.attention_s = 0;
            double t0 = now_s();
            for (int k = 0; k < b.n_decode; k++)
                next = sample_argmax(forward(net, &next, 1, depth + k, false), c.vocab);
            double secs = now_s() - t0;
            ks.timed = false;
            d[i].tg.push_back(b.n_decode / secs);
            d[i].attn_ms.push_back(1e3 * ks.attention_s / b.n_decode);
            d[i].mat_ms.push_back(1e3 * ks.matmul_s / b.n_decode);
            if (!b.gguf.empty()) {  // llama.cpp right after, on the same machine minute
                std::string ct = " -ctk " + b.kv_name + " -ctv " + b.kv_name;
                if (depth > 0)
                    for (const LlamaRow& lr : llama_bench_rows(b.lb, b.gguf, b.threads, "-p " + std::to_string(depth) + " -n 0" + ct))
                        if (lr.n_prompt == depth && lr.ts > 0) d[i].llama_pp.push_back(lr.ts);
                for (const LlamaRow& lr : llama_bench_rows(b.lb, b.gguf, b.threads, "-p 0 -n " + std::to_string(b.n_decode) +
                                                                                    " -d " + std::to_string(depth) + ct))
                    if (lr.n_gen > 0 && lr.ts > 0) d[i].llama_tg.push_back(lr.ts);
            }
        }

    double short_tg = 0;  // the short context's speed: the faster of the depths up to 1,024
    for (size_t i = 0; i < b.depths.size(); i++)
        if (b.depths[i] <= 1024) short_tg = std::max(short_tg, median(d[i].tg));
    printf("decode after a context (KV cache %s; %d tokens decoded; weights %.0f MB a token; bandwidth %.1f GB/s)\n",
           b.kv_name.c_str(), b.n_decode, b.weight_bytes / 1e6, b.bandwidth_gbs);
    printf("%7s %9s %9s %7s %8s %8s %7s %8s %8s %7s %8s %8s %8s\n", "depth", "pp", "llama.pp", "ratio", "decode",
           "llama.tg", "ratio", "MB/tok", "limit", "share", "vs short", "attn ms", "mat ms");
    auto med = [](const std::vector<double>& v) { return v.empty() ? 0.0 : median(v); };
    for (size_t i = 0; i < b.depths.size(); i++) {
        int depth = b.depths[i];
        // The cache a token reads: keys and values of every layer at every
        // earlier position (the average over the decoded tokens' depths).
        double cache = 2.0 * c.n_layers * (depth + b.n_decode / 2.0) * cache_row;
        double bytes = b.weight_bytes + cache, limit = b.bandwidth_gbs * 1e9 / bytes;
        double pp = med(d[i].pp), tg = med(d[i].tg), lpp = med(d[i].llama_pp), ltg = med(d[i].llama_tg);
        auto cell = [](double v, const char* fmt) { return v > 0 ? strprintf(fmt, v) : std::string("-"); };
        // No depth up to 1,024 in the list: no short context to compare with.
        std::string vs_short = short_tg > 0 ? strprintf("%.0f%%", 100 * tg / short_tg) : std::string("-");
        printf("%7d %9s %9s %7s %8.1f %8s %7s %8.0f %8.1f %6.0f%% %8s %8.2f %8.2f\n", depth,
               cell(pp, "%.1f").c_str(), cell(lpp, "%.1f").c_str(), cell(pp > 0 && lpp > 0 ? pp / lpp : 0, "%.2fx").c_str(),
               tg, cell(ltg, "%.1f").c_str(), cell(ltg > 0 ? tg / ltg : 0, "%.2fx").c_str(), bytes / 1e6, limit,
               100 * tg / limit, vs_short.c_str(), med(d[i].attn_ms), med(d[i].mat_ms));
        std::string tg_name = "tg" + std::to_string(b.n_decode) + (depth ? "@d" + std::to_string(depth) : "");
        std::string pp_name = "pp" + std::to_string(depth);  // a prompt of `depth` tokens, from position 0
        if (depth > 0) rows.push_back(record_row("lantern", pp_name, 0, b.weights, b.kv_name, b.kernels, b.threads, d[i].pp));
        nlohmann::ordered_json t = record_row("lantern", tg_name, depth, b.weights, b.kv_name, b.kernels, b.threads, d[i].tg);
        t["mb_per_token"] = bytes / 1e6;
        t["limit_tok_s"] = limit;
        t["attention_ms"] = med(d[i].attn_ms);
        t["matmul_ms"] = med(d[i].mat_ms);
        rows.push_back(t);
        if (!d[i].llama_pp.empty())
            rows.push_back(record_row("llama.cpp", pp_name, 0, b.weights, b.kv_name, "", b.threads, d[i].llama_pp));
        if (!d[i].llama_tg.empty())
            rows.push_back(record_row("llama.cpp", tg_name, depth, b.weights, b.kv_name, "", b.threads, d[i].llama_tg));
    }
    printf("\npp: prefill tok/s of a prompt of `depth` tokens (one forward); decode: tok/s of --decode tokens after it;\n"
           "llama.*: llama-bench -p depth -n 0, and -p 0 -n N -d depth, same weights, threads and cache type (medians);\n"
           "MB/tok: weights + the cache read per token; limit: the tok/s those bytes allow at the bandwidth;\n"
           "share: decode / limit; vs short: decode / the fastest decode at depth <= 1024; attn ms, mat ms: a token's\n"
           "time in attention and in the weight products.\n");
    if (!b.lb.why_not.empty()) printf("llama.cpp  not measured: %s\n", b.lb.why_not.c_str());
}
