// chapters/layer/checker.cpp — the student's decoder_layer against the
// engine's own (net.cpp:decoder_layer), on models/tiny.
//
// The engine's forward() and forward_batch() call decoder_layer for every
// layer; this checker defines it, and sends each call to the engine's copy
// (decoder_layer_reference) or the student's (decoder_layer_student). Two
// Nets run the same tokens, one with each, and after layer 0 the checker
// keeps each one's buffers (net.q, net.k, ... as net.h describes them), so
// the student's are compared with the engine's step by step: the first one
// that differs names the step. The probe listener that --report uses
// (logging.h: ProbeListener) hands it the engine's intermediates too (the q
// before RoPE, ...), to say what went wrong. Then the whole model, with the
// student's layer in every layer, must give the engine's logits, for one
// sequence and for a batch of sequences in a paged pool. Plain kernels on
// both sides: the same calls in the same order give the same bits, and a
// float tolerance leaves room for another order.
#include <map>
#include "../checker_common.h"
#include "serve/kv_pages.h"

void decoder_layer_student(Net& net, int layer, int T, const int* pos);
void decoder_layer_reference(Net& net, int layer, int T, const int* pos);

// The engine's tensors of the last reference call: layer 0's, and the
// embedding. And each side's taps of layer 0, in order: [Reference, Student].
static std::map<std::string, std::vector<float>> g_seen;
static std::vector<std::string> g_taps[2];
static void on_tensor(const char* name, int layer, int, const float* data, int rows, int cols) {
    if (layer == 0 && strcmp(name, "attn.scores")) g_taps[(int)g_side].push_back(name);
    if (g_side == Side::Student) return;
    if (layer == 0 || !strcmp(name, "embed")) g_seen[name].assign(data, data + (size_t)rows * cols);
}
static const ProbeListener LISTENER = {nullptr, nullptr, nullptr, on_tensor};

// Each side's buffers after its layer 0 of the last call: [Reference, Student].
static std::map<std::string, std::vector<float>> g_after[2];
static std::vector<float> take(const LineVector<float>& v, size_t n) { return std::vector<float>(v.begin(), v.begin() + n); }
static void keep_layer0(Net& net, int T, const int* pos, std::map<std::string, std::vector<float>>& out) {
    const Config& c = net.model->cfg;
    size_t q_dim = (size_t)c.n_heads * c.head_dim, kv_dim = (size_t)c.n_kv_heads * c.head_dim;
    out["q"] = take(net.q, T * q_dim);
    out["k"] = take(net.k, T * kv_dim);
    out["v"] = take(net.v, T * kv_dim);
    out["att"] = take(net.att, T * q_dim);
    out["up"] = take(net.up, T * c.intermediate);
    out["gate"] = take(net.gate, T * c.intermediate);
    out["x"] = take(net.x, T * c.hidden);
    // The cache rows this call wrote (f32 here): every row's keys, then its values.
    std::vector<float> keys, values;
    for (const SeqRows& s : net.seqs)
        for (int t = 0; t < s.T; t++) {
            const float* k = (const float*)kv_row(s.kv, 0, s.pos + t, false);
            const float* v = (const float*)kv_row(s.kv, 0, s.pos + t, true);
            keys.insert(keys.end(), k, k + kv_dim);
            values.insert(values.end(), v, v + kv_dim);
        }
    keys.insert(keys.end(), values.begin(), values.end());
    out["the cache"] = keys;
}

// The engine calls this for every layer: the side in g_side runs it.
void decoder_layer(Net& net, int layer, int T, const int* pos) {
    if (layer == 0) g_taps[(int)g_side].clear();
    if (g_side == Side::Reference) decoder_layer_reference(net, layer, T, pos);
    else decoder_layer_student(net, layer, T, pos);
    if (layer == 0) keep_layer0(net, T, pos, g_after[(int)g_side]);
}

// forward() on the engine's side (its tensors seen by the listener), then on the student's.
static const float* forward_reference(Net& net, const std::vector<int>& tokens, int pos) {
    g_side = Side::Reference;
    g_seen.clear();
    g_watch_tensors = true;
    g_probe_listener = &LISTENER;
    const float* r = forward(net, tokens.data(), (int)tokens.size(), pos, false);
    g_watch_tensors = false;
    g_probe_listener = nullptr;
    return r;
}
static const float* forward_student(Net& net, const std::vector<int>& tokens, int pos) {
    g_side = Side::Student;
    g_watch_tensors = true;  // to see the student's taps
    g_probe_listener = &LISTENER;
    const float* r = forward(net, tokens.data(), (int)tokens.size(), pos, false);
    g_watch_tensors = false;
    g_probe_listener = nullptr;
    return r;
}

static bool close(const std::vector<float>& got, const std::vector<float>& want) { return compare(want, got, 2e-5).empty(); }

// v minus its bias, row by row; then (when heads > 0) rotated at positions p0 + t.
static std::vector<float> unbias_rope(std::vector<float> v, const std::vector<float>& bias, int heads, const Config& c,
                                      int p0) {
    size_t n = bias.size();
    for (size_t i = 0; i < v.size(); i++) v[i] -= bias[i % n];
    for (size_t t = 0; heads && t < v.size() / n; t++) apply_rope(&v[t * n], heads, c.head_dim, p0 + (int)t, c.rope_theta);
    return v;
}
// up = rmsnorm(mid, w) W_up: what the MLP's up projection is for a given stream.
static std::vector<float> up_of(const std::vector<float>& mid, const std::vector<float>& w, const Model& m, int T) {
    const Config& c = m.cfg;
    std::vector<float> h(mid.size()), up((size_t)T * c.intermediate);
    for (int t = 0; t < T; t++) rmsnorm(&h[(size_t)t * c.hidden], &mid[(size_t)t * c.hidden], w.data(), c.hidden, c.eps);
    matmul(up.data(), h.data(), m.layers[0].w_up, nullptr, T);
    return up;
}
static std::vector<float> add(std::vector<float> a, const std::vector<float>& b) {
    for (size_t i = 0; i < a.size(); i++) a[i] += b[i];
    return a;
}

// Why a buffer differs, from the engine's intermediates and the usual slips.
static std::string diagnose(const std::string& buf, const std::vector<float>& got, const std::vector<float>& x_in,
                            const Model& m, int T, int pos) {
    const Config& c = m.cfg;
    const LayerWeights& L = m.layers[0];
    auto& s = g_seen;
    if (buf == "q" || buf == "k") {
        bool q = buf == "q";
        const std::vector<float>& raw = s[q ? "attn.q" : "attn.k"];
        const std::vector<float>& bias = q ? L.bq : L.bk;
        int heads = q ? c.n_heads : c.n_kv_heads;
        const char* b = buf.c_str();
        if (close(got, raw))
            return fmt(tr("%s is not rotated: apply_rope to each token's row, at position pos + t.",
                          "%s 没有旋转：对每个词元的那一行调用 apply_rope，位置是 pos + t。"), b);
        if (close(got, unbias_rope(raw, bias, heads, c, pos)))
            return fmt(tr("you forgot the bias: %s = h W%s + b%s (Qwen2 has biases on q, k and v: matmul's bias argument, "
                          "L.b%s.data()).",
                          "你忘了偏置：%s = h W%s + b%s（Qwen2 的 q、k、v 都有偏置：就是 matmul 的 bias 参数，"
                          "L.b%s.data()）。"),
                       b, b, b, b);
        if (pos > 0 && close(got, unbias_rope(raw, std::vector<float>(bias.size(), 0.0f), heads, c, 0) ))
            return tr("rotated at position t; token t of this call sits at position pos + t.",
                      "你按位置 t 做了旋转；这次调用中的第 t 个词元位于位置 pos + t。");
        return fmt(tr("%s = rmsnorm(x) (weights L.attn_norm) times W%s, plus b%s, then RoPE at pos + t.",
                      "%s = rmsnorm(x)（权重 L.attn_norm）乘以 W%s，加上 b%s，再在位置 pos + t 做 RoPE。"),
                   b, b, b);
    }
    if (buf == "v") {
        if (close(got, unbias_rope(s["attn.v"], L.bv, 0, c, 0)))
            return tr("you forgot the bias: v = h Wv + bv (Qwen2 has biases on q, k and v: matmul's bias argument).",
                      "你忘了偏置：v = h Wv + bv（Qwen2 的 q、k、v 都有偏置：就是 matmul 的 bias 参数）。");
        return tr("v = rmsnorm(x) (weights L.attn_norm) times Wv, plus bv; v is not rotated.",
                  "v = rmsnorm(x)（权重 L.attn_norm）乘以 Wv，加上 bv；v 不做旋转。");
    }
    if (buf == "the cache")
        return tr("attention(net, layer, q, k, v, att) stores each token's k and v in the cache: call it once, after "
                  "RoPE, with the rotated k.",
                  "attention(net, layer, q, k, v, att) 会把每个词元的 k 和 v 存进缓存：在 RoPE 之后调用它一次，"
                  "传入旋转过的 k。");
    if (buf == "att")
        return tr("q, k, v and the cache are right, so: att is what attention(net, layer, q, k, v, net.att.data()) "
                  "writes; nothing should change net.att between that call and the output projection but the tap.",
                  "q、k、v 和缓存都对了，所以问题在这里：att 就是 attention(net, layer, q, k, v, net.att.data()) "
                  "写出的结果；从这次调用到输出投影之间，除了 tap 之外不该有任何东西改动 net.att。");
    std::vector<float> mid = add(x_in, s["attn.o_proj"]);
    if (buf == "up") {
        if (close(got, up_of(add(s["attn_norm"], s["attn.o_proj"]), L.ffn_norm, m, T)))
            return tr("the residual: x = x + att Wo adds to x itself, not to its normed copy h (did rmsnorm write over "
                      "x?). The stream x goes through the layer un-normed; only the branches see rmsnorm(x).",
                      "残差：x = x + att Wo 是加到 x 本身上，而不是加到它归一化后的副本 h 上（rmsnorm 是不是把 x "
                      "覆盖了？）。残差流 x 穿过这一层时不做归一化；只有两个分支看到的是 rmsnorm(x)。");
        if (close(got, up_of(s["attn.o_proj"], L.ffn_norm, m, T)))
            return tr("you forgot the residual: x = x + att Wo, not x = att Wo.",
                      "你忘了残差：应该是 x = x + att Wo，而不是 x = att Wo。");
        if (close(got, up_of(mid, L.attn_norm, m, T)))
            return tr("the second norm has its own weights: L.ffn_norm, not L.attn_norm.",
                      "第二个归一化有它自己的权重：是 L.ffn_norm，不是 L.attn_norm。");
        return tr("attention is right, so: x = x + att Wo (Wo has no bias), then h = rmsnorm(x) with L.ffn_norm, "
                  "then up = h W_up.",
                  "注意力是对的，所以问题在后面：x = x + att Wo（Wo 没有偏置），然后用 L.ffn_norm 算 h = rmsnorm(x)，"
                  "再算 up = h W_up。");
    }
    if (buf == "gate") {
        if (close(got, s["mlp.gate"]))
            return tr("gate is h W_gate: now apply swiglu(gate, up, intermediate) to it.",
                      "gate 是 h W_gate：接下来对它调用 swiglu(gate, up, intermediate)。");
        return tr("gate = silu(h W_gate) * up: matmul with L.w_gate, then swiglu(gate, up, intermediate) row by row.",
                  "gate = silu(h W_gate) * up：先用 L.w_gate 做矩阵乘法，再逐行调用 swiglu(gate, up, intermediate)。");
    }
    if (close(got, s["mlp.down"]))
        return tr("you forgot the second residual: x = x + gate W_down.", "你忘了第二个残差：x = x + gate W_down。");
    if (close(got, add(s["ffn_norm"], s["mlp.down"])))
        return tr("the residual adds to x itself, not to its normed copy h.", "残差是加到 x 本身上，而不是加到它归一化后的副本 h 上。");
    return tr("the MLP's inputs are right, so the end is wrong: x = x + gate W_down (W_down has no bias).",
              "多层感知机的输入是对的，所以错在最后：x = x + gate W_down（W_down 没有偏置）。");
}

// One call of the layer: the engine's forward and the student's on the same tokens.
static void run_case(Group& g, const Model& m, Net& ref, Net& stu, const std::vector<int>& tokens, int pos) {
    int T = (int)tokens.size();
    g.start(T == 1 ? fmt(tr("1 token at position %d", "位置 %d 上的 1 个词元"), pos)
                   : fmt(tr("%d tokens at positions %d..%d", "%d 个词元，位置 %d..%d"), T, pos, pos + T - 1));
    forward_reference(ref, tokens, pos);
    forward_student(stu, tokens, pos);
    std::vector<float> x_in = g_seen["embed"];
    auto& want = g_after[(int)Side::Reference];
    auto& got = g_after[(int)Side::Student];
    for (const char* buf : {"q", "k", "v", "the cache", "att", "up", "gate", "x"}) {
        std::string d = compare(want[buf], got[buf], 2e-5);
        if (d.empty()) continue;
        bool stub = got["x"] == x_in;
        return g.fail(fmt(tr("%s (the first buffer that differs from the engine's): ", "%s（第一个与引擎不同的缓冲区）："),
                          strcmp(buf, "the cache") ? buf : tr("the cache", "缓存")) + d,
                      stub ? tr("x came back unchanged: is it still the stub?", "x 原样返回了：是不是还是桩函数？")
                           : diagnose(buf, got[buf], x_in, m, T, pos));
    }
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "layer",
                  "one Qwen2 decoder layer from the engine's kernels, against net.cpp's own",
                  "用引擎的核函数搭出一个 Qwen2 解码器层，与 net.cpp 自己的对照");
    kernels_init(KernelSet::Plain, 1);
    Model m;
    Tokenizer tok;
    Group setup("models/tiny");
    if (!load_tiny(setup, m, tok) || !setup.end()) return finish("layer");
    const Config& c = m.cfg;
    const int n_ctx = 64;

    Group one(tr("one token at position 0: attention over itself", "位置 0 上的一个词元：只对自己做注意力"));
    {
        Net ref, stu;
        net_init(ref, m, n_ctx);
        net_init(stu, m, n_ctx);
        run_case(one, m, ref, stu, {9707}, 0);
    }
    one.end();

    // The taps (net.h: tap): -vv, the report, the lens and --ablate see the
    // layer only through them, so a layer that skips one hides that tensor.
    Group taps(tr("the taps: every tensor the engine's layer names, named by yours too, in the same order",
                  "tap：引擎的层命名的每个张量，你的层也都命名了，而且顺序相同"));
    {
        Net ref, stu;
        net_init(ref, m, n_ctx);
        net_init(stu, m, n_ctx);
        taps.start(tr("a 3-token prompt", "3 个词元的提示词"));
        forward_reference(ref, {785, 1156, 315}, 0);
        forward_student(stu, {785, 1156, 315}, 0);
        const std::vector<std::string>&want = g_taps[(int)Side::Reference], &got = g_taps[(int)Side::Student];
        std::string missing;
        for (const std::string& n : want)
            if (std::find(got.begin(), got.end(), n) == got.end()) missing += (missing.empty() ? "" : ", ") + n;
        if (!missing.empty())
            taps.fail(tr("not tapped: ", "没有 tap：") + missing,
                      tr("call tap(net, name, layer, data, rows, cols) right after computing each of them: --ablate "
                         "zeros attn.out and mlp.down through it, and -vv, the report and the lens see only what is tapped.",
                         "每算出一个张量就调用 tap(net, name, layer, data, rows, cols)：--ablate 通过它把 attn.out 和 "
                         "mlp.down 置零，而 -vv、报告和 logit lens 只能看到经过 tap 的张量。"));
        else if (got != want)
            taps.fail(tr("the taps come in another order or twice", "tap 的顺序不同，或者有重复"),
                      tr("tap each tensor once, right after computing it, in the order of the layer's math.",
                         "每个张量只 tap 一次，算出来就 tap，顺序跟层的计算顺序一致。"));
    }
    taps.end();

    // One sequence through three groups: a prompt, a second chunk, decode.
    Net ref, stu;
    net_init(ref, m, n_ctx);
    net_init(stu, m, n_ctx);
    Group prompt(tr("a 5-token prompt at positions 0..4 (causal: each token sees the ones before it)",
                    "位置 0..4 上 5 个词元的提示词（因果：每个词元只看到它前面的词元）"));
    run_case(prompt, m, ref, stu, {785, 1156, 315, 279, 1879}, 0);
    prompt.end();
    Group chunk(tr("a second chunk of 3 tokens at positions 5..7 (the cache holds 0..4)",
                   "第二段 3 个词元，位置 5..7（缓存里已有 0..4）"));
    run_case(chunk, m, ref, stu, {374, 264, 3460}, 5);
    chunk.end();
    Group decode(tr("decode: one token a step at positions 8..11", "解码：位置 8..11，每步一个词元"));
    for (int p = 8; p < 12; p++) run_case(decode, m, ref, stu, {1000 + 37 * p}, p);
    decode.end();

    Group e2e(tr("end to end: your layer for all 4 layers of models/tiny, then the final norm and the LM head",
                 "端到端：models/tiny 的全部 4 层都用你的层，然后是最后的归一化和语言模型头"), 2);
    {
        Net r, s;
        net_init(r, m, n_ctx);
        net_init(s, m, n_ctx);
        std::vector<int> tokens = tokenizer_encode(tok, "One layer, run four times, is the model.");
        int at = 0;
        for (int step = 0; step <= 6; step++) {
            int T = step == 0 ? (int)tokens.size() : 1;
            e2e.start(step == 0 ? fmt(tr("the %d-token prompt", "%d 个词元的提示词"), T)
                                : fmt(tr("decode step %d at position %d", "第 %d 步解码，位置 %d"), step, at));
            std::vector<int> chunk(tokens.begin() + at, tokens.begin() + at + T);
            const float* lr = forward_reference(r, chunk, at);
            std::vector<float> want(lr, lr + c.vocab);
            const float* ls = forward_student(s, chunk, at);
            std::vector<float> got(ls, ls + c.vocab);
            std::string d = compare(want, got, 1e-4);
            if (!d.empty()) {
                e2e.fail(tr("the logits differ: ", "logit 不同：") + d,
                         g_groups_failed ? tr("fix the failures above first: they say which step.",
                                              "先修好上面的失败：它们会指出是哪一步。")
                                         : tr("layer 0 is right but the stack is not? Use the layer you are given "
                                              "(net.model->layers[layer]), never layer 0's weights.",
                                              "第 0 层对了，叠起来却不对？用传给你的那一层（net.model->layers[layer]），"
                                              "不要总用第 0 层的权重。"));
                break;
            }
            at += T;
            tokens.push_back(sample_argmax(want.data(), c.vocab));
        }
    }
    e2e.end();

    // The server's batch: rows of several sequences in one call, each at its
    // own positions and with its own keys in a shared pool of pages
    // (forward_batch, kv_pages.h). The same layer must serve it.
    Group batch(tr("a batch: two sequences in one call, each at its own positions, in a paged pool",
                   "一个批：一次调用里两个序列，各在自己的位置上，键值存放在分页的池里"));
    {
        Net net;
        net_init(net, m, 1);  // forward_batch uses only the Net's scratch
        std::vector<int> a = tokenizer_encode(tok, "The first sequence is longer than a page of keys."), b = {9707, 11};
        std::vector<float> want[2];
        for (int side = 0; side < 2; side++) {
            g_side = side ? Side::Student : Side::Reference;
            KVPages pages;
            kv_pages_init(pages, c, 128, DType::F32, 4);
            KVSeq ka, kb;
            BatchSeq s[2];
            s[0].tokens = a.data();  // a's prompt alone first, then a's next 2 tokens with b's prompt
            s[0].T = (int)a.size() - 2;
            s[0].logits = true;
            KVSeq* tables[2] = {&ka, &kb};
            kv_batch_reserve(pages, tables, s, 1);
            forward_batch(net, s, 1);
            s[0].tokens = a.data() + a.size() - 2;
            s[0].pos = (int)a.size() - 2;
            s[0].T = 2;
            s[1].tokens = b.data();
            s[1].T = (int)b.size();
            s[1].logits = true;
            kv_batch_reserve(pages, tables, s, 2);
            const float* l = forward_batch(net, s, 2);
            want[side].assign(l, l + 2 * c.vocab);
        }
        batch.start(fmt(tr("a's last 2 tokens at positions %d..%d beside b's 2 at 0..1",
                           "a 的最后 2 个词元在位置 %d..%d，旁边是 b 在 0..1 的 2 个词元"),
                        (int)a.size() - 2, (int)a.size() - 1));
        std::string d = compare(want[0], want[1], 1e-4);
        if (!d.empty())
            batch.fail(tr("the logits differ: ", "logit 不同：") + d,
                       tr("token t is at position pos[t] (the batch's tokens are not at 0, 1, 2 ...): rotate each "
                          "at its own, and call attention() once for all T tokens; it keeps each sequence's keys apart.",
                          "第 t 个词元位于位置 pos[t]（批里的词元不是在 0、1、2……上）：每个词元按它自己的位置旋转，"
                          "并且对全部 T 个词元只调用一次 attention()；它会把各个序列的键分开。"));
    }
    batch.end();

    // --ablate (net.h: Ablation): the layer's taps switch parts off,
    // whoever wrote the layer. Heads of two layers and one MLP, off in both Nets.
    Group ablate(tr("--ablate: heads 1.0 and 2.3 and layer 3's MLP switched off (net.h: tap)",
                    "--ablate：关掉注意力头 1.0 和 2.3 以及第 3 层的多层感知机（net.h：tap）"));
    {
        Net r, s;
        net_init(r, m, n_ctx);
        net_init(s, m, n_ctx);
        r.ablate.heads = s.ablate.heads = {{1, 0}, {2, 3}};
        r.ablate.mlps = s.ablate.mlps = {3};
        std::vector<int> tokens = tokenizer_encode(tok, "A head switched off is a row of zeros.");
        ablate.start(fmt(tr("the %d-token prompt", "%d 个词元的提示词"), (int)tokens.size()));
        const float* lr = forward_reference(r, tokens, 0);
        std::vector<float> want(lr, lr + c.vocab);
        const float* ls = forward_student(s, tokens, 0);
        std::string d = compare(want, std::vector<float>(ls, ls + c.vocab), 1e-4);
        if (!d.empty())
            ablate.fail(tr("the logits differ: ", "logit 不同：") + d,
                        g_groups_failed ? tr("fix the failures above first: they say which step.",
                                             "先修好上面的失败：它们会指出是哪一步。")
                                        : tr("call tap(net, \"attn.out\", layer, att, T, q_dim) just before the output "
                                             "projection, and tap(net, \"mlp.down\", layer, out, T, hidden) on the MLP's output before "
                                             "adding it to x.",
                                             "在输出投影之前调用 tap(net, \"attn.out\", layer, att, T, q_dim)，"
                                             "并在把多层感知机的输出加到 x 之前，对它调用 tap(net, \"mlp.down\", layer, out, T, hidden)。"));
    }
    ablate.end();
    return finish("layer");
}
