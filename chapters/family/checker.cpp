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
    checker_begin(argc, argv, "family", "a row of arch.cpp's family table for Llama checkpoints");

    Group old("the Qwen rows are still found, an unknown type is not");
    for (const char* t : {"qwen2", "qwen3", "gpt2", ""}) {
        old.start(fmt("model_type \"%s\"", t));
        const Arch *want = arch_by_model_type_reference(t), *got = arch_by_model_type_student(t);
        if (want != got)
            old.fail(fmt("expected %s, got %s", want ? want->name : "nullptr", got ? got->name : "nullptr"),
                     "arch_by_model_type still answers for ARCHS' rows (the same pointer) and nullptr for a type no row has.");
    }
    old.end();

    Group row("the Llama row: its fields and its tensors' names");
    const Arch* q2 = arch_by_model_type_reference("qwen2");
    const Arch* a = arch_by_model_type_student("llama");
    row.start("arch_by_model_type(\"llama\")");
    if (!a) row.fail("got nullptr", "the row's model_type (its second field) is what config.json says: \"llama\".");
    else {
        row.start("the fields");
        std::string d;
        if (!a->model_type || strcmp(a->model_type, "llama")) d += "model_type is " + name_or_null(a->model_type) + ", not \"llama\"\n";
        if (!a->name || strcmp(a->name, "llama")) d += "name (GGUF's general.architecture) is " + name_or_null(a->name) + ", not \"llama\"\n";
        if (a->qkv_bias) d += "qkv_bias is true: Llama's q, k and v have no bias\n";
        if (a->qk_norm) d += "qk_norm is true: Llama has no norm per head (that is Qwen3's)\n";
        if (a->head_dim_stated) d += "head_dim_stated is true: a Llama head is hidden / heads wide unless config.json says\n";
        if (a->tied_head) d += "tied_head is true: a Llama head is its own matrix unless config.json ties it\n";
        if (!d.empty()) row.fail(d.substr(0, d.size() - 1), "arch.h says what each field changes.");
        row.start("the global tensors");
        for (const ArchTensor& t : q2->globals) {
            const ArchTensor* s = arch_tensor(*a, t.role);
            if (!s || !s->hf || !s->gguf || strcmp(s->hf, t.hf) || strcmp(s->gguf, t.gguf)) {
                row.fail(fmt("the tensor of role %d: expected \"%s\" / \"%s\", got %s / %s", (int)t.role, t.hf, t.gguf,
                             s ? name_or_null(s->hf).c_str() : "(none)", s ? name_or_null(s->gguf).c_str() : "(none)"),
                         "Llama names its embedding, final norm and LM head as Qwen does: arch.cpp's QWEN_GLOBALS.");
                break;
            }
        }
        row.start("one layer's tensors, in order");
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
            row.fail("expected " + names + "\ngot      " + (got_names.empty() ? "(none)" : got_names),
                     has_bias ? "a Llama layer has no bias tensors: leave QBias, KBias and VBias out."
                              : "the Qwen2 layer's tensors without the three biases, in the same order, with both names "
                                "(arch.cpp's QWEN2_LAYER).");
        }
    }
    row.end();

    Group e2e("end to end: models/tiny as a Llama checkpoint, its logits", 2);
    std::string llama = "build/exercise/family/tiny-llama", zero = "build/exercise/family/tiny-zero-bias";
    e2e.start("write the two test folders");
    try {
        rewrite_tiny(llama, "llama", true);
        rewrite_tiny(zero, "qwen2", false);
    } catch (const std::exception& ex) {
        e2e.fail(std::string("could not rewrite models/tiny: ") + ex.what(), "models/tiny comes from `make models`.");
    }
    if (!e2e.failed) {
        kernels_init(KernelSet::Plain, 1);
        Model ref, stu;
        e2e.start("load " + llama + " with your row, and " + zero + " with Qwen2's");
        try {
            g_side = Side::Reference;
            load_model(ref, zero);
            g_side = Side::Student;
            load_model(stu, llama);
        } catch (const LanternError& ex) {
            e2e.fail(std::string("loading failed: ") + ex.what(),
                     g_groups_failed ? "fix the failures above first: they are smaller and say more." : "");
        }
        if (!e2e.failed) {
            e2e.start("the logits of a prompt and 6 greedy steps, Llama without biases against Qwen2 with zero biases");
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
                if (!d.empty()) e2e.fail(fmt("step %d: ", step) + d, "a zero bias adds exactly 0: the two must agree bit for bit.");
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
