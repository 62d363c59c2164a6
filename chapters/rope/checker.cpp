// chapters/rope/checker.cpp — the student's apply_rope against the engine's.
//
// 1. the book's worked example; 2. position 0 (nothing moves); 3. random
// heads of awkward widths at many positions and both thetas; 4. long
// context (positions near 32767); 5. the whole model: logits of models/tiny
// at every step of a greedy generation, starting at 0 and at 4000.
#include "../checker_common.h"

void apply_rope_reference(float* vec, int n_heads, int head_dim, int pos, float theta);
void apply_rope_student(float* vec, int n_heads, int head_dim, int pos, float theta);

// The engine's calls land here.
void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta) {
    if (g_side == Side::Reference) apply_rope_reference(vec, n_heads, head_dim, pos, theta);
    else apply_rope_student(vec, n_heads, head_dim, pos, theta);
}

// What a wrong answer most often means, found by trying the usual mistakes
// on the same input: the interleaved layout, the opposite direction, the
// exponent computed in integer arithmetic.
static std::string diagnose(const std::vector<float>& in, const std::vector<float>& got, int n_heads, int hd, int pos,
                            float theta) {
    if (got == in) return tr("your function left vec unchanged (is it still the stub?)", "你的函数没有改动 vec（是不是还是桩函数？）");
    std::vector<float> v = in;  // interleaved pairs (2i, 2i+1)
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < hd / 2; i++) {
            double a = pos * std::pow((double)theta, -2.0 * i / hd);
            float c = (float)std::cos(a), s = (float)std::sin(a);
            float* p = &v[(size_t)h * hd + 2 * i];
            float x = p[0], y = p[1];
            p[0] = x * c - y * s;
            p[1] = y * c + x * s;
        }
    if (compare(v, got, 1e-4).empty())
        return tr("you rotate neighbours (2i, 2i+1): that is the interleaved layout. Qwen pairs i with i + head_dim/2.",
                  "你旋转的是相邻的一对 (2i, 2i+1)：那是交错式 RoPE 的排法。Qwen 把 i 和 i + head_dim/2 配成一对。");
    v = in;  // the other way round
    apply_rope_reference(v.data(), n_heads, hd, -pos, theta);
    if (compare(v, got, 1e-4).empty())
        return tr("you rotate the wrong way: the angle's sign is flipped (check the two -/+).",
                  "你转反了方向：角度的符号反了（检查那两处 -/+）。");
    if (pos != 0) {  // every pair at frequency 1: the exponent was computed in integers
        v = in;
        float c = (float)std::cos((double)pos), s = (float)std::sin((double)pos);
        for (int h = 0; h < n_heads; h++)
            for (int i = 0; i < hd / 2; i++) {
                float* p = &v[(size_t)h * hd];
                float a = p[i], b = p[i + hd / 2];
                p[i] = a * c - b * s;
                p[i + hd / 2] = b * c + a * s;
            }
        if (compare(v, got, 1e-4).empty())
            return tr("every pair turned by the same angle, pos radians: the exponent is 0 for every i. `-2 * i / head_dim` "
                      "is integer division (2i < head_dim, so it truncates to 0); write -2.0 * i / head_dim.",
                      "每一对都转了同一个角度，pos 弧度：对每个 i，指数都是 0。`-2 * i / head_dim` "
                      "是整数除法（2i < head_dim，所以截断成 0）；请写成 -2.0 * i / head_dim。");
    }
    return "";
}

static const char* generic() {
    return tr("angle = pos * theta^(-2i/head_dim): i counts pairs (0 .. head_dim/2 - 1), the exponent is negative, and both "
              "new values use the old a and b.",
              "angle = pos * theta^(-2i/head_dim)：i 数的是第几对（0 .. head_dim/2 - 1），指数是负的，"
              "两个新值都要用旧的 a 和 b 来算。");
}

static void run_case(Group& g, int n_heads, int hd, int pos, float theta, double rtol, const std::string& hint = "") {
    g.start(fmt("n_heads=%d, head_dim=%d, pos=%d, theta=%g", n_heads, hd, pos, theta));
    std::vector<float> in = gaussians(n_heads * hd), want = in, got = in;
    apply_rope_reference(want.data(), n_heads, hd, pos, theta);
    apply_rope_student(got.data(), n_heads, hd, pos, theta);
    std::string d = compare(want, got, rtol);
    if (!d.empty()) {
        std::string why = diagnose(in, got, n_heads, hd, pos, theta);
        g.fail(tr("vec in: ", "输入的 vec：") + show(in) + "\n" + d, !why.empty() ? why : !hint.empty() ? hint : generic());
    }
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "rope",
                  "rotate pairs (i, i + head_dim/2) by pos * theta^(-2i/head_dim)",
                  "把每一对 (i, i + head_dim/2) 旋转 pos * theta^(-2i/head_dim)");

    Group book(tr("the book's worked example", "书中的演算示例"));
    book.start("v=(1,0,0,1), head_dim 4, pos 1, theta 10000 -> (0.5403, -0.0100, 0.8415, 1.0000)");
    {
        std::vector<float> in = {1, 0, 0, 1}, want = in, got = in;
        apply_rope_reference(want.data(), 1, 4, 1, 10000.0f);
        apply_rope_student(got.data(), 1, 4, 1, 10000.0f);
        std::string d = compare(want, got, 1e-4);
        if (!d.empty()) {
            std::string why = diagnose(in, got, 1, 4, 1, 10000.0f);
            book.fail(d, why.empty() ? generic() : why);
        }
    }
    book.end();

    Group zero(tr("position 0: every angle is 0, nothing moves", "位置 0：每个角度都是 0，什么都不动"));
    for (int hd : {2, 8, 64}) run_case(zero, 3, hd, 0, 1e6f, 1e-6,
                 tr("at pos 0, cos = 1 and sin = 0: vec must come back unchanged.", "在 pos 0，cos = 1，sin = 0：vec 必须原样返回。"));
    zero.end();

    // Float angles are fine up to a few thousand positions at this
    // tolerance; the long-context group below is stricter.
    Group rnd(tr("random heads, positions 1..1000", "随机的注意力头，位置 1..1000"));
    for (int hd : {2, 4, 6, 10, 16, 64, 128})
        for (int n_heads : {1, 2, 14})
            for (float theta : {1e4f, 1e6f}) run_case(rnd, n_heads, hd, rand_int(1, 1000), theta, 2e-4);
    rnd.end();

    Group longctx(tr("long context: positions near 32767", "长上下文：32767 附近的位置"));
    for (int pos : {20000, 30000, 32767})
        run_case(longctx, 2, 64, pos, 1e6f, 1e-4,
                 tr("the angle pos * freq is near 30000 radians here, where a float is precise only to about 0.002. "
                    "Lantern computes freq and the angle in double, the exact value of the formula; Hugging Face's Qwen2 "
                    "computes them in float32 (the model was trained that way, so neither is a bug), and the two differ "
                    "by up to ~0.001 rad this far out. This checker holds you to the engine's choice: compute freq and "
                    "the angle in double, then cast cos and sin to float.",
                    "这里的角度 pos * freq 接近 30000 弧度，float 在这个量级上只精确到约 0.002。"
                    "Lantern 用 double 计算 freq 和角度，也就是公式的精确值；Hugging Face 的 Qwen2 "
                    "用 float32 计算（模型就是这样训练的，所以两者都不算错），位置这么靠后时两者最多相差约 0.001 弧度。"
                    "本检查程序要求你和引擎的选择一致：用 double 计算 freq 和角度，再把 cos 和 sin 转成 float。"));
    longctx.end();

    Group e2e(tr("end to end: models/tiny, logits at every step of a greedy generation",
                 "端到端：models/tiny，贪心解码每一步的 logit"), 2);
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Plain, 1);
    if (load_tiny(e2e, m, tok)) {
        std::vector<int> prompt = tokenizer_encode(tok, "Rotary embeddings tell attention how far apart two tokens are.");
        check_forward(e2e, m, prompt, 8, 1e-4);
        if (e2e.failed == 0) check_forward(e2e, m, prompt, 4, 1e-4, 4000);
    }
    e2e.end();
    return finish("rope");
}
