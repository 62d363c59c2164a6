// chapters/family/checker.cpp — the student's Llama row of the family table.
//
// 1. the Qwen rows are still found, and an unknown type is not; 2. the
// Llama row's fields and names, against what a Llama checkpoint holds (the
// Qwen2 layer without its three biases); 3. the whole model: models/tiny
// rewritten as a Llama checkpoint (no bias tensors, model_type "llama")
// loads with the student's row and gives the logits of models/tiny with its
// biases set to zero.
#include <fstream>
#include <sys/stat.h>
#include "../checker_common.h"
#include "arch.h"

const Arch* arch_by_model_type_reference(const std::string& model_type);
const Arch* arch_by_model_type_student(const std::string& model_type);

// The engine's calls land here (parse_config asks it for every config.json).
const Arch* arch_by_model_type(const std::string& model_type) {
    return g_side == Side::Reference ? arch_by_model_type_reference(model_type) : arch_by_model_type_student(model_type);
}

static bool is_bias(TensorRole r) { return r == TensorRole::QBias || r == TensorRole::KBias || r == TensorRole::VBias; }
static std::string name_or_null(const char* s) { return s ? fmt("\"%s\"", s) : "nullptr"; }

// Rewrites models/tiny's safetensors file: without its bias tensors
// (drop = true), or with their bytes set to zero.
static void rewrite_tiny(const std::string& dir, const std::string& model_type, bool drop) {
    mkdir(dir.c_str(), 0755);
    std::ifstream in(std::string(TINY) + "/model.safetensors", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint64_t n;
    memcpy(&n, bytes.data(), 8);
    nlohmann::json head = nlohmann::json::parse(bytes.substr(8, n)), out = nlohmann::json::object();
    std::string data;
    for (auto& [name, t] : head.items()) {
        if (name == "__metadata__") { out[name] = t; continue; }
        bool bias = name.find("_proj.bias") != std::string::npos;
        if (bias && drop) continue;
        size_t a = t["data_offsets"][0], b = t["data_offsets"][1];
        std::string piece = bytes.substr(8 + n + a, b - a);
        if (bias) piece.assign(piece.size(), '\0');
        nlohmann::json u = t;
        u["data_offsets"] = {data.size(), data.size() + piece.size()};
        out[name] = u;
        data += piece;
    }
    std::string h = out.dump();
    uint64_t hn = h.size();
    std::ofstream f(dir + "/model.safetensors", std::ios::binary);
    f.write((const char*)&hn, 8);
    f << h << data;
    std::ifstream cin_(std::string(TINY) + "/config.json");
    nlohmann::json cfg = nlohmann::json::parse(cin_);
    cfg["model_type"] = model_type;
    cfg["architectures"] = {model_type == "llama" ? "LlamaForCausalLM" : "Qwen2ForCausalLM"};
    std::ofstream(dir + "/config.json") << cfg.dump(2);
    for (const char* file : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
        std::ifstream src(std::string(TINY) + "/" + file, std::ios::binary);
        if (src) std::ofstream(dir + "/" + file, std::ios::binary) << src.rdbuf();
    }
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "family",
                  "a row of arch.cpp's family table for Llama checkpoints",
                  "为 Llama 检查点在 arch.cpp 的模型家族表里加一行");

    Group old(tr("the Qwen rows are still found, an unknown type is not", "Qwen 的几行仍然能找到，未知的类型找不到"));
    for (const char* t : {"qwen2", "qwen3", "gpt2", ""}) {
        old.start(fmt("model_type \"%s\"", t));
        const Arch *want = arch_by_model_type_reference(t), *got = arch_by_model_type_student(t);
        if (want != got)
            old.fail(fmt(tr("expected %s, got %s", "应为 %s，实际是 %s"), want ? want->name : "nullptr", got ? got->name : "nullptr"),
                     tr("arch_by_model_type still answers for ARCHS' rows (the same pointer) and nullptr for a type no row has.",
                        "arch_by_model_type 对 ARCHS 里已有的行仍要给出答案（同一个指针），对哪一行都没有的类型返回 nullptr。"));
    }
    old.end();

    Group row(tr("the Llama row: its fields and its tensors' names", "Llama 这一行：它的字段和张量名"));
    const Arch* q2 = arch_by_model_type_reference("qwen2");
    const Arch* a = arch_by_model_type_student("llama");
    row.start("arch_by_model_type(\"llama\")");
    if (!a)
        row.fail(tr("got nullptr", "得到的是 nullptr"),
                 tr("the row's model_type (its second field) is what config.json says: \"llama\".",
                    "这一行的 model_type（第二个字段）就是 config.json 里写的：\"llama\"。"));
    else {
        row.start(tr("the fields", "各个字段"));
        std::string d;
        if (!a->model_type || strcmp(a->model_type, "llama"))
            d += fmt(tr("model_type is %s, not \"llama\"\n", "model_type 是 %s，不是 \"llama\"\n"), name_or_null(a->model_type).c_str());
        if (!a->name || strcmp(a->name, "llama"))
            d += fmt(tr("name (GGUF's general.architecture) is %s, not \"llama\"\n",
                        "name（GGUF 的 general.architecture）是 %s，不是 \"llama\"\n"),
                     name_or_null(a->name).c_str());
        if (a->qkv_bias) d += tr("qkv_bias is true: Llama's q, k and v have no bias\n", "qkv_bias 是 true：Llama 的 q、k、v 没有偏置\n");
        if (a->qk_norm)
            d += tr("qk_norm is true: Llama has no norm per head (that is Qwen3's)\n",
                    "qk_norm 是 true：Llama 没有按注意力头做的归一化（那是 Qwen3 的）\n");
        if (a->head_dim_stated)
            d += tr("head_dim_stated is true: a Llama head is hidden / heads wide unless config.json says\n",
                    "head_dim_stated 是 true：除非 config.json 另有说明，Llama 的注意力头宽度是 hidden / heads\n");
        if (a->tied_head)
            d += tr("tied_head is true: a Llama head is its own matrix unless config.json ties it\n",
                    "tied_head 是 true：除非 config.json 要求共享嵌入，Llama 的语言模型头是一个独立的矩阵\n");
        if (!d.empty()) row.fail(d.substr(0, d.size() - 1), tr("arch.h says what each field changes.", "每个字段改变什么，arch.h 里有说明。"));
        row.start(tr("the global tensors", "全局张量"));
        for (const ArchTensor& t : q2->globals) {
            const ArchTensor* s = arch_tensor(*a, t.role);
            if (!s || !s->hf || !s->gguf || strcmp(s->hf, t.hf) || strcmp(s->gguf, t.gguf)) {
                row.fail(fmt(tr("the tensor of role %d: expected \"%s\" / \"%s\", got %s / %s",
                                "角色为 %d 的张量：应为 \"%s\" / \"%s\"，实际是 %s / %s"),
                             (int)t.role, t.hf, t.gguf, s ? name_or_null(s->hf).c_str() : tr("(none)", "（无）"),
                             s ? name_or_null(s->gguf).c_str() : tr("(none)", "（无）")),
                         tr("Llama names its embedding, final norm and LM head as Qwen does: arch.cpp's QWEN_GLOBALS.",
                            "Llama 的嵌入、最后的归一化和语言模型头与 Qwen 同名：见 arch.cpp 的 QWEN_GLOBALS。"));
                break;
            }
        }
        row.start(tr("one layer's tensors, in order", "一层的张量，按顺序"));
        std::vector<const ArchTensor*> want;
        for (const ArchTensor& t : q2->layer)
            if (!is_bias(t.role)) want.push_back(&t);
        std::string got_names;
        for (const ArchTensor& t : a->layer) got_names += std::string(got_names.empty() ? "" : ", ") + (t.hf ? t.hf : "?");
        bool same = a->layer.size() == want.size();
        for (size_t k = 0; same && k < want.size(); k++) {
            const ArchTensor& t = a->layer[k];
            same = t.role == want[k]->role && t.hf && t.gguf && !strcmp(t.hf, want[k]->hf) && !strcmp(t.gguf, want[k]->gguf);
        }
        if (!same) {
            std::string names;
            for (const ArchTensor* t : want) names += std::string(names.empty() ? "" : ", ") + t->hf;
            bool has_bias = false;
            for (const ArchTensor& t : a->layer) has_bias |= is_bias(t.role);
            row.fail(tr("expected ", "应为：") + names + tr("\ngot      ", "\n实际：") +
                         (got_names.empty() ? std::string(tr("(none)", "（无）")) : got_names),
                     has_bias ? tr("a Llama layer has no bias tensors: leave QBias, KBias and VBias out.",
                                   "Llama 的层没有偏置张量：去掉 QBias、KBias 和 VBias。")
                              : tr("the Qwen2 layer's tensors without the three biases, in the same order, with both names "
                                   "(arch.cpp's QWEN2_LAYER).",
                                   "就是 Qwen2 层的张量去掉三个偏置，顺序不变，两种名字都要有（见 arch.cpp 的 QWEN2_LAYER）。"));
        }
    }
    row.end();

    Group e2e(tr("end to end: models/tiny as a Llama checkpoint, its logits", "端到端：把 models/tiny 当作 Llama 检查点，比较它的 logit"), 2);
    std::string llama = "build/exercise/family/tiny-llama", zero = "build/exercise/family/tiny-zero-bias";
    e2e.start(tr("write the two test folders", "写出两个测试目录"));
    try {
        rewrite_tiny(llama, "llama", true);
        rewrite_tiny(zero, "qwen2", false);
    } catch (const std::exception& ex) {
        e2e.fail(tr("could not rewrite models/tiny: ", "无法改写 models/tiny：") + std::string(ex.what()),
                 tr("models/tiny comes from `make models`.", "models/tiny 由 `make models` 生成。"));
    }
    if (!e2e.failed) {
        kernels_init(KernelSet::Plain, 1);
        Model ref, stu;
        e2e.start(fmt(tr("load %s with your row, and %s with Qwen2's", "用你的那一行加载 %s，用 Qwen2 的加载 %s"), llama.c_str(),
                      zero.c_str()));
        try {
            g_side = Side::Reference;
            load_model(ref, zero);
            g_side = Side::Student;
            load_model(stu, llama);
        } catch (const LanternError& ex) {
            e2e.fail(tr("loading failed: ", "加载失败：") + std::string(ex.what()), g_groups_failed ? tr("fix the failures above first: they are smaller and say more.", "先修好上面的失败：它们规模更小，说明的问题也更多。") : "");
        }
        if (!e2e.failed) {
            e2e.start(tr("the logits of a prompt and 6 greedy steps, Llama without biases against Qwen2 with zero biases",
                         "一个提示词加 6 步贪心解码的 logit：没有偏置的 Llama 对照偏置为 0 的 Qwen2"));
            Net nr, ns;
            net_init(nr, ref, 32);
            net_init(ns, stu, 32);
            std::vector<int> toks = {9707, 11, 1879, 0};
            int pos = 0;
            for (int step = 0; step < 7 && !e2e.failed; step++) {
                int T = step == 0 ? (int)toks.size() : 1;
                const int* in = &toks[toks.size() - T];
                const float* r = forward(nr, in, T, pos, false);
                std::vector<float> want(r, r + ref.cfg.vocab);
                const float* s = forward(ns, in, T, pos, false);
                std::string d = compare(want.data(), s, ref.cfg.vocab, 0.0);
                if (!d.empty())
                    e2e.fail(fmt(tr("step %d: ", "第 %d 步："), step) + d,
                             tr("a zero bias adds exactly 0: the two must agree bit for bit.", "为 0 的偏置恰好加 0：两者必须逐位相同。"));
                pos += T;
                toks.push_back(sample_argmax(want.data(), ref.cfg.vocab));
            }
        }
    }
    e2e.end();
    // The exercise links two copies of arch.cpp (the engine's and the
    // reference), and both build the one ARCHS table at start-up: leaving
    // without running destructors keeps them from freeing it twice.
    int rc = finish("family");
    fflush(stdout);
    _exit(rc);
}
