// chapters/attention/checker.cpp — the student's attention_head_plain against the engine's.
//
// 1. the book's worked example; 2. one position (the weight is 1); 3. random
// caches: several KV heads side by side (so the stride is not head_dim),
// awkward widths, f32/f16/bf16; 4. scores in the thousands (softmax must
// not overflow); 5. the whole model under --kernels plain: logits of
// models/tiny at every step of a greedy generation, f32 and bf16 caches.
#include "../checker_common.h"

void attention_head_plain_reference(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                              size_t stride, DType kv_type, int n, int head_dim);
void attention_head_plain_student(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                            size_t stride, DType kv_type, int n, int head_dim);

// The engine's calls land here.
void attention_head_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                    size_t stride, DType kv_type, int n, int head_dim) {
    if (g_side == Side::Reference) attention_head_plain_reference(out, scores, q, keys, values, stride, kv_type, n, head_dim);
    else attention_head_plain_student(out, scores, q, keys, values, stride, kv_type, n, head_dim);
}

// A little KV cache: n positions, each holding n_kv heads of head_dim
// numbers of `type`, like one layer of the engine's.
struct Cache {
    int n, n_kv, hd;
    DType type;
    std::vector<uint8_t> k, v;
    size_t elt() const { return type == DType::F32 ? 4 : 2; }
    size_t stride() const { return (size_t)n_kv * hd * elt(); }
    const uint8_t* key(int head) const { return k.data() + (size_t)head * hd * elt(); }
    const uint8_t* value(int head) const { return v.data() + (size_t)head * hd * elt(); }
    void put(std::vector<uint8_t>& dst, int pos, int head, int i, float x) {
        uint8_t* p = dst.data() + pos * stride() + ((size_t)head * hd + i) * elt();
        if (type == DType::F32) memcpy(p, &x, 4);
        else {
            uint16_t h = type == DType::F16 ? f32_to_f16(x) : f32_to_bf16(x);
            memcpy(p, &h, 2);
        }
    }
    Cache(int n_, int n_kv_, int hd_, DType t, float sd) : n(n_), n_kv(n_kv_), hd(hd_), type(t) {
        k.resize(n * stride());
        v.resize(n * stride());
        for (int j = 0; j < n; j++)
            for (int h = 0; h < n_kv; h++)
                for (int i = 0; i < hd; i++) {
                    put(k, j, h, i, gaussian(sd));
                    put(v, j, h, i, gaussian());
                }
    }
};

// Attention done the usual wrong ways, to name the mistake behind a failure.
static std::vector<float> variant(const float* q, const Cache& c, int head, size_t stride, float scale, bool use_softmax) {
    std::vector<float> s(c.n), out(c.hd, 0.0f);
    for (int j = 0; j < c.n; j++) s[j] = vec_dot_plain(q, c.key(head) + j * stride, c.type, c.hd) * scale;
    if (use_softmax) softmax(s.data(), c.n);
    for (int j = 0; j < c.n; j++) vec_axpy_plain(out.data(), s[j], c.value(head) + j * stride, c.type, c.hd);
    return out;
}

static std::string diagnose(const std::vector<float>& got, const float* q, const Cache& c, int head) {
    bool garbage = false;
    for (float x : got) garbage |= std::fabs(x) > 1e4f;
    if (garbage)
        return tr("out holds huge numbers: it starts as garbage (the checker fills it with 12345), so set it "
                  "to zero before adding the weighted values.",
                  "out 里是很大的数：它一开始是垃圾值（检查程序往里填了 12345），所以在累加加权后的值之前，先把它清零。");
    float scale = 1.0f / std::sqrt((float)c.hd);
    if (compare(variant(q, c, head, c.stride(), 1.0f, true), got, 1e-4).empty())
        return tr("you forgot to divide the scores by sqrt(head_dim).", "你忘了把分数除以 sqrt(head_dim)。");
    if (compare(variant(q, c, head, c.stride(), scale, false), got, 1e-4).empty())
        return tr("you mixed the values with the raw scores: apply softmax to them first.",
                  "你直接用原始分数混合了值向量：先对分数做 softmax。");
    if (c.n_kv > 1 && compare(variant(q, c, head, (size_t)c.hd * c.elt(), scale, true), got, 1e-4).empty())
        return tr("you stepped from one position to the next by head_dim numbers; rows are `stride` bytes apart (the "
                  "other KV heads sit in between).",
                  "你从一个位置走到下一个位置时跨过了 head_dim 个数；行与行之间相隔 `stride` 字节（中间夹着其他的键值注意力头）。");
    return "";
}

static const char* generic() {
    return tr("scores[j] = q . k_j / sqrt(head_dim), softmax over j = 0 .. n-1, then out = sum_j scores[j] * v_j. Row j of "
              "keys starts at keys + j * stride (bytes).",
              "scores[j] = q . k_j / sqrt(head_dim)，对 j = 0 .. n-1 做 softmax，再算 out = sum_j scores[j] * v_j。"
              "keys 的第 j 行从 keys + j * stride（字节）开始。");
}

static void run_case(Group& g, const std::string& name, const Cache& c, int head, const std::vector<float>& q,
                     double rtol, const std::string& hint = "") {
    g.start(fmt(tr("%s: n=%d, head_dim=%d, KV head %d of %d, %s", "%s：n=%d，head_dim=%d，键值注意力头 %d（共 %d 个），%s"), name.c_str(), c.n, c.hd, head, c.n_kv, dtype_name(c.type)));
    std::vector<float> want(c.hd), got(c.hd, 12345.0f), ws(c.n), gs(c.n, 12345.0f);
    attention_head_plain_reference(want.data(), ws.data(), q.data(), c.key(head), c.value(head), c.stride(), c.type, c.n, c.hd);
    attention_head_plain_student(got.data(), gs.data(), q.data(), c.key(head), c.value(head), c.stride(), c.type, c.n, c.hd);
    std::string d = compare(want, got, rtol);
    if (!d.empty()) {
        std::string why = diagnose(got, q.data(), c, head);
        return g.fail("q: " + show(q) + "\nout: " + d, !why.empty() ? why : !hint.empty() ? hint : generic());
    }
    d = compare(ws, gs, rtol);
    if (!d.empty())
        g.fail(tr("out is right but scores (the weights after softmax) are not: ",
                  "out 对了，但 scores（softmax 之后的权重）不对：") + d,
               tr("the engine keeps the weights for -v and the report's attention maps: leave softmax's result in "
                  "scores[0 .. n-1].",
                  "引擎要留着这些权重，供 -v 和报告里的注意力图使用：把 softmax 的结果留在 scores[0 .. n-1] 里。"));
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "attention",
                  "one head: softmax(q . k_j / sqrt(d)) mixes the v_j",
                  "一个注意力头：用 softmax(q . k_j / sqrt(d)) 混合各个 v_j");

    Group book(tr("the book's worked example (token 2 of 3)", "书中的演算示例（3 个词元中的第 2 个）"));
    {
        Cache c(3, 1, 4, DType::F32, 0.0f);  // zeros, then the book's keys and values
        float keys[3][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {1, 0, 1, 0}}, vals[3][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}};
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 4; i++) {
                c.put(c.k, j, 0, i, keys[j][i]);
                c.put(c.v, j, 0, i, vals[j][i]);
            }
        run_case(book, "q=(2,0,0,0) -> out (0.4223, 0.1554, 0.4223, 0)", c, 0, {2, 0, 0, 0}, 1e-5);
    }
    book.end();

    Group one(tr("one position: its weight is 1, out is its value", "只有一个位置：它的权重是 1，out 就是它的值向量"));
    for (int hd : {4, 64}) {
        Cache c(1, 2, hd, DType::F32, 1.0f);
        run_case(one, tr("one position", "一个位置"), c, 1, gaussians(hd), 1e-5,
                 tr("with n = 1 the only weight is softmax(x) = 1, so out = v_0.", "n = 1 时唯一的权重是 softmax(x) = 1，所以 out = v_0。"));
    }
    one.end();

    Group rnd(tr("random caches", "随机的缓存"));
    for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (int hd : {2, 6, 10, 16, 64})
            for (int n : {2, 3, 7, 33, 100}) {
                int n_kv = rand_int(1, 3);
                Cache c(n, n_kv, hd, t, 1.0f);
                run_case(rnd, tr("random", "随机"), c, rand_int(0, n_kv - 1), gaussians(hd), 1e-5);
            }
    rnd.end();

    // The reference adds its dot products in double; a float sum is a few
    // ulps off, which at scores of ~1000 moves the weights by ~1e-4.
    Group big(tr("scores in the thousands", "上千的分数"));
    for (int n : {2, 50}) {
        Cache c(n, 2, 64, DType::F32, 30.0f);
        run_case(big, "keys ~ N(0, 30^2), q ~ N(0, 30^2)", c, 0, gaussians(64, 30.0f), 2e-3,
                 tr("exp(1000) is inf in float, and inf/inf is NaN. Softmax is unchanged when the same number is "
                    "subtracted from every score: subtract the largest one before exp().",
                    "exp(1000) 在 float 里是 inf，而 inf/inf 是 NaN。每个分数都减去同一个数，softmax 的结果不变："
                    "在 exp() 之前先减去最大的那个分数。"));
    }
    big.end();

    Group e2e(tr("end to end: models/tiny under --kernels plain, logits at every step of a greedy generation",
                 "端到端：--kernels plain 下的 models/tiny，贪心解码每一步的 logit"), 2);
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Plain, 1);
    if (load_tiny(e2e, m, tok)) {
        std::vector<int> prompt = tokenizer_encode(tok, "Each new token looks back at every token before it.");
        check_forward(e2e, m, prompt, 8, 1e-4);
        if (e2e.failed == 0) check_forward(e2e, m, prompt, 4, 1e-4, 0, DType::BF16);
    }
    e2e.end();
    return finish("attention");
}
