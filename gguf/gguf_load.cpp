// gguf_load.cpp — a GGUF file as the engine's Model and Tokenizer: the
// adapters above the file format (gguf.cpp), the model (model.cpp) and the
// tokenizer (tokenizer_load.cpp), none of which knows of this file.
// generate.cpp:open_model and open_tokenizer call them for a .gguf path.
#include "gguf/gguf_load.h"
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include "arch.h"
#include "gguf/gguf.h"
#include "json_read.h"
#include "logging.h"
#include "model.h"
#include "gguf/quants.h"
#include "tokenizer.h"

// ---------------------------------------------------------------------------
// The model: the family from general.architecture, the hyper-parameters
// from its keys (qwen2.*, qwen3.*), the tensors under the engine's (Hugging
// Face) names, which the family's row of arch.cpp translates.

// A hyper-parameter: a positive integer up to `hi`, model.h's bound for it
// (a file that says 2,000,000,000 layers is refused here, not by a failed
// allocation of the layers).
static int64_t need_int(const GGUFFile& f, const std::string& key, int64_t hi, int64_t def = -1) {
    const GGUFValue* v = gguf_find(f, key);
    if (!v) {
        if (def >= 0) return def;
        fail("%s: key %s is missing", f.path.c_str(), key.c_str());
    }
    if (v->type == GGUF_STRING || v->type == GGUF_ARRAY || v->type == GGUF_F32 || v->type == GGUF_F64 || v->i64 <= 0)
        fail("%s: key %s must be a positive integer", f.path.c_str(), key.c_str());
    if (v->i64 > hi) fail("%s: key %s is %lld; at most %lld is allowed", f.path.c_str(), key.c_str(), (long long)v->i64, (long long)hi);
    return v->i64;
}
static double need_float(const GGUFFile& f, const std::string& key, double def) {
    const GGUFValue* v = gguf_find(f, key);
    if (!v) return def;
    if (v->type == GGUF_STRING || v->type == GGUF_ARRAY || !std::isfinite(v->num))
        fail("%s: key %s must be a number", f.path.c_str(), key.c_str());
    return v->num;
}
static std::string get_str(const GGUFFile& f, const std::string& key) {
    const GGUFValue* v = gguf_find(f, key);
    if (!v) return "";
    if (v->type != GGUF_STRING) fail("%s: key %s must be a string", f.path.c_str(), key.c_str());
    return v->str;
}

void gguf_load_model(Model& m, const std::string& path) {
    m.dir = path;  // the file is its own folder: tokenizer and all
    m.weights_path = path;
    m.map = gguf_map_file(path, m.file_size);
    m.files.push_back({path, m.map, m.file_size});  // unmapped by ~Model, counted by weights_bytes
    GGUFFile f;
    gguf_parse(f, (const uint8_t*)m.map, m.file_size, path);
    m.header_len = f.data_start;
    // The architecture names the prefix of every hyper-parameter key:
    // qwen2.embedding_length, qwen3.embedding_length, ...
    std::string arch = get_str(f, "general.architecture");
    const Arch* family = arch_by_gguf_name(arch);
    if (!family)
        fail("%s: architecture \"%s\" is not supported (%s are)", path.c_str(), arch.c_str(), arch_names("and").c_str());
    const std::string a = arch + ".";
    Config& c = m.cfg;
    c.arch = family;
    c.hidden = (int)need_int(f, a + "embedding_length", MAX_HIDDEN);
    c.intermediate = (int)need_int(f, a + "feed_forward_length", MAX_INTERMEDIATE);
    c.n_layers = (int)need_int(f, a + "block_count", MAX_LAYERS);
    c.n_heads = (int)need_int(f, a + "attention.head_count", MAX_HEADS);
    c.n_kv_heads = (int)need_int(f, a + "attention.head_count_kv", MAX_HEADS, c.n_heads);
    c.max_pos = (int)need_int(f, a + "context_length", MAX_POSITIONS, 32768);
    c.eps = (float)need_float(f, a + "attention.layer_norm_rms_epsilon", 1e-6);
    c.rope_theta = (float)need_float(f, a + "rope.freq_base", 10000.0);
    if (c.n_heads % c.n_kv_heads) fail("%s: head_count %d is not a multiple of head_count_kv %d", path.c_str(), c.n_heads, c.n_kv_heads);
    // The head dimension is attention.key_length when the file states it
    // (Qwen3-0.6B: 128, while embedding_length / head_count = 64), else the
    // quotient, as llama.cpp reads it. Lantern's heads have one dimension for
    // queries, keys and values alike.
    bool stated = gguf_find(f, a + "attention.key_length") != nullptr;
    if (!stated && c.hidden % c.n_heads)
        fail("%s: embedding_length %d is not a multiple of head_count %d", path.c_str(), c.hidden, c.n_heads);
    c.head_dim = (int)need_int(f, a + "attention.key_length", MAX_HIDDEN, stated ? -1 : c.hidden / c.n_heads);
    if (c.head_dim % 2) fail("%s: head dimension %d must be even for RoPE", path.c_str(), c.head_dim);
    if (need_int(f, a + "attention.value_length", MAX_HIDDEN, c.head_dim) != c.head_dim)
        fail("%s: %sattention.value_length differs from the key length %d", path.c_str(), a.c_str(), c.head_dim);
    const GGUFValue* bos = gguf_find(f, "tokenizer.ggml.bos_token_id");
    const GGUFValue* eos = gguf_find(f, "tokenizer.ggml.eos_token_id");
    if (bos && bos->type != GGUF_ARRAY && bos->type != GGUF_STRING) c.bos_id = (int)bos->i64;
    if (eos && eos->type != GGUF_ARRAY && eos->type != GGUF_STRING) c.eos_ids = {(int)eos->i64};
    // config.json's stop ids when one eos id could not say them (./run
    // convert writes the key then): the folder's list, so the file stops
    // where the folder does.
    if (const GGUFValue* ids = gguf_find(f, "lantern.eos_token_ids")) {
        if (ids->type != GGUF_ARRAY || ids->elem_type == GGUF_STRING || ids->elem_type == GGUF_F32 ||
            ids->elem_type == GGUF_F64 || ids->nums.size() > 64)
            fail("%s: key lantern.eos_token_ids must be an array of at most 64 integers", path.c_str());
        c.eos_ids.clear();
        for (double id : ids->nums) {
            if (id < 0 || id > MAX_VOCAB) fail("%s: key lantern.eos_token_ids holds %.0f, not an id in [0, %d]", path.c_str(), id, MAX_VOCAB);
            c.eos_ids.push_back((int)id);
        }
    }

    const std::string embd = arch_gguf_name(*family, TensorRole::Embed, -1), output = arch_gguf_name(*family, TensorRole::LmHead, -1);
    bool has_output = false;
    for (const GGUFTensor& g : f.tensors) {
        TensorInfo t;
        t.name = arch_translate(*family, g.name, false);
        if (t.name.empty()) t.name = g.name;  // not one the engine uses; kept for `info`
        if (!ggml_type_to_dtype(g.ggml_type, t.dtype))
            fail("%s: tensor %s has type %s, which Lantern does not compute with (it reads %s)", path.c_str(),
                 g.name.c_str(), ggml_type_name(g.ggml_type), weight_type_list());
        t.shape.assign(g.ne.rbegin(), g.ne.rend());  // PyTorch order: [rows, cols]
        t.offset = f.data_start + g.offset;
        t.nbytes = g.nbytes;
        t.data = (const uint8_t*)m.map + t.offset;
        has_output |= g.name == output;
        if (g.name == embd) c.vocab = (int)g.ne.back();
        m.tensors.push_back(t);
    }
    if (c.vocab == 0) fail("%s: tensor %s is missing", path.c_str(), embd.c_str());
    c.tie_embeddings = !has_output;
    c.torch_dtype = "gguf v" + std::to_string(f.version);
    std::sort(m.tensors.begin(), m.tensors.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
    m.checks.push_back("GGUF v" + std::to_string(f.version) + ": " + std::to_string(f.kv.size()) + " values, " +
                       std::to_string(f.tensors.size()) + " tensor infos, data at byte " + std::to_string(f.data_start));
    m.checks.push_back("every tensor: a type Lantern computes with, aligned to " + std::to_string(f.alignment) +
                       ", inside the file, no two overlapping");
    bind_weights(m);  // from here the load is the folder's (model.cpp)
}

// ---------------------------------------------------------------------------
// The tokenizer: tokenizer.ggml.* rebuilt as the tokenizer.json it came
// from, then read by the one tokenizer.json reader (tokenizer_load.cpp).
//
// token_type says what each id is: 1 normal (BPE vocabulary), 3 control
// (special added tokens such as <|im_end|>), 4 user-defined (added tokens
// that are not special), 5 unused (padding rows of the embedding).

// Qwen2's pre-tokenizer regex (what tokenizer.ggml.pre = "qwen2" stands for).
static const char QWEN2_SPLIT_REGEX[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
enum { TOKEN_NORMAL = 1, TOKEN_CONTROL = 3, TOKEN_USER_DEFINED = 4, TOKEN_UNUSED = 5 };

void gguf_load_tokenizer(Tokenizer& tok, const std::string& path) {
    MappedGGUF g(path);
    const GGUFFile& f = g.f;
    std::string model = get_str(f, "tokenizer.ggml.model"), pre = get_str(f, "tokenizer.ggml.pre");
    if (model.empty()) fail("%s: no tokenizer in the file (tokenizer.ggml.model is missing)", path.c_str());
    if (model != "gpt2") fail("%s: tokenizer model \"%s\" is not supported (gpt2, i.e. byte-level BPE, is)", path.c_str(), model.c_str());
    if (pre != "qwen2") fail("%s: tokenizer pre-tokenizer \"%s\" is not supported (qwen2 is)", path.c_str(), pre.c_str());
    const GGUFValue* tokens = gguf_find(f, "tokenizer.ggml.tokens");
    const GGUFValue* types = gguf_find(f, "tokenizer.ggml.token_type");
    const GGUFValue* merges = gguf_find(f, "tokenizer.ggml.merges");
    if (!tokens || tokens->type != GGUF_ARRAY || tokens->elem_type != GGUF_STRING || tokens->strs.empty())
        fail("%s: tokenizer.ggml.tokens is missing or not an array of strings", path.c_str());
    if (!merges || merges->type != GGUF_ARRAY || merges->elem_type != GGUF_STRING)
        fail("%s: tokenizer.ggml.merges is missing or not an array of strings", path.c_str());
    if (types && (types->type != GGUF_ARRAY || types->nums.size() != tokens->strs.size()))
        fail("%s: tokenizer.ggml.token_type must be an array as long as tokenizer.ggml.tokens", path.c_str());
    // Every id the tokenizer can produce must have a row in the embedding
    // (named as the file's family names it; the first row's name when the
    // family is unknown: a tokenizer alone may still be read).
    const Arch* family = arch_by_gguf_name(get_str(f, "general.architecture"));
    const std::string embd = arch_gguf_name(family ? *family : ARCHS[0], TensorRole::Embed, -1);
    for (const GGUFTensor& t : f.tensors)
        if (t.name == embd && (size_t)t.ne.back() < tokens->strs.size())
            fail("%s: tokenizer.ggml.tokens has %zu entries, %s only %lld rows", path.c_str(),
                 tokens->strs.size(), embd.c_str(), (long long)t.ne.back());
    using json = nlohmann::json;
    json vocab = json::object(), added = json::array(), merge_list = json::array();
    for (size_t i = 0; i < tokens->strs.size(); i++) {
        int type = types ? (int)types->nums[i] : TOKEN_NORMAL;
        if (type == TOKEN_UNUSED) continue;
        if (type == TOKEN_CONTROL || type == TOKEN_USER_DEFINED)
            added.push_back({{"id", i}, {"content", tokens->strs[i]}, {"special", type == TOKEN_CONTROL}});
        else vocab[tokens->strs[i]] = i;
    }
    for (const std::string& mg : merges->strs) merge_list.push_back(mg);
    json j = {
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}}},
        {"added_tokens", added},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", QWEN2_SPLIT_REGEX}}}, {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
        {"decoder", {{"type", "ByteLevel"}}},
    };
    tokenizer_load_text(tok, j.dump(-1, ' ', false, json::error_handler_t::replace), path);
    tok.chat_template = get_str(f, "tokenizer.chat_template");
    const GGUFValue* eos = gguf_find(f, "tokenizer.ggml.eos_token_id");
    if (eos && eos->i64 >= 0 && (size_t)eos->i64 < tokens->strs.size()) tok.eos_token = tokens->strs[eos->i64];
}

// ---------------------------------------------------------------------------
// Generation settings (gguf_load.h has the table of keys).
//
// llama.cpp's own keys for the four settings both engines have, so that
// llama.cpp samples a converted file as Lantern does; every other key of
// generation_config.json under lantern.generation.<key>, as it was.
static const std::pair<const char*, const char*> SAMPLING_KEYS[] = {
    {"general.sampling.temp", "temperature"},
    {"general.sampling.top_k", "top_k"},
    {"general.sampling.top_p", "top_p"},
    {"general.sampling.penalty_repeat", "repetition_penalty"},
};
static const std::string LANTERN_GENERATION = "lantern.generation.";

static std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string r;
    for (const std::string& s : v) r += (r.empty() ? "" : sep) + s;
    return r;
}

static bool is_float_type(uint32_t t) { return t == GGUF_F32 || t == GGUF_F64; }

// One GGUF value as the JSON value it stands for.
static nlohmann::json value_to_json(const GGUFFile& f, const GGUFValue& v) {
    using json = nlohmann::json;
    auto number = [&](uint32_t t, double d, int64_t i) -> json {
        if (t == GGUF_BOOL) return json(i != 0);
        if (!is_float_type(t)) return json(i);
        if (!std::isfinite(d)) fail("%s: key %s must be a finite number", f.path.c_str(), v.key.c_str());
        return json(d);
    };
    if (v.type == GGUF_STRING) return json(v.str);
    if (v.type != GGUF_ARRAY) return number(v.type, v.num, v.i64);
    json a = json::array();
    if (v.elem_type == GGUF_STRING)
        for (const std::string& s : v.strs) a.push_back(s);
    else
        for (double x : v.nums) a.push_back(number(v.elem_type, x, (int64_t)x));
    return a;
}

std::string gguf_generation_config(const std::string& path) {
    MappedGGUF g(path);
    const GGUFFile& f = g.f;
    nlohmann::json j = nlohmann::json::object();
    for (const GGUFValue& v : f.kv)
        if (v.key.compare(0, LANTERN_GENERATION.size(), LANTERN_GENERATION) == 0)
            j[v.key.substr(LANTERN_GENERATION.size())] = value_to_json(f, v);
    // llama.cpp's keys last: where both name a setting, llama.cpp's wins, so
    // the two engines agree.
    for (auto& [key, name] : SAMPLING_KEYS)
        if (const GGUFValue* v = gguf_find(f, key)) {
            if (v->type == GGUF_STRING || v->type == GGUF_ARRAY || v->type == GGUF_BOOL)
                fail("%s: key %s must be a number", path.c_str(), key);
            j[name] = value_to_json(f, *v);
        }
    return j.empty() ? "" : j.dump();
}

// A JSON value as a GGUF value under `key`; false for what GGUF cannot hold
// as one value (null, an object, a list of mixed things).
static bool json_to_value(const nlohmann::json& x, const std::string& key, GGUFValue& v) {
    v = GGUFValue();
    v.key = key;
    auto int_type = [](long long i) { return i >= INT32_MIN && i <= INT32_MAX ? GGUF_I32 : GGUF_I64; };
    if (x.is_boolean()) {
        v.type = GGUF_BOOL, v.i64 = x.get<bool>(), v.num = (double)v.i64;
    } else if (x.is_number_integer() && (!x.is_number_unsigned() || x.get<unsigned long long>() <= INT64_MAX)) {
        v.i64 = x.get<long long>(), v.num = (double)v.i64, v.type = int_type(v.i64);
    } else if (x.is_number()) {
        v.type = GGUF_F64, v.num = x.get<double>();
    } else if (x.is_string()) {
        v.type = GGUF_STRING, v.str = x.get<std::string>();
    } else if (x.is_array() && !x.empty()) {
        v.type = GGUF_ARRAY;
        bool strings = x[0].is_string();
        v.elem_type = strings ? GGUF_STRING : GGUF_I32;
        for (const nlohmann::json& e : x) {
            if (strings && e.is_string()) v.strs.push_back(e.get<std::string>());
            else if (!strings && e.is_number_integer() && !e.is_number_unsigned()) v.nums.push_back((double)e.get<long long>());
            else if (!strings && e.is_number_unsigned() && e.get<unsigned long long>() <= INT32_MAX) v.nums.push_back((double)e.get<unsigned long long>());
            else if (!strings && e.is_number()) v.nums.push_back(e.get<double>()), v.elem_type = GGUF_F64;
            else return false;
            if (!strings && v.elem_type == GGUF_I32 && (v.nums.back() < INT32_MIN || v.nums.back() > INT32_MAX)) v.elem_type = GGUF_I64;
        }
    } else {
        return false;
    }
    return true;
}

void gguf_generation_values(std::vector<GGUFValue>& kv, const std::string& source) {
    if (is_gguf_path(source)) {  // a GGUF source: its keys as they are
        MappedGGUF g(source);
        for (const GGUFValue& v : g.f.kv)
            if (v.key.compare(0, 17, "general.sampling.") == 0 || v.key.compare(0, LANTERN_GENERATION.size(), LANTERN_GENERATION) == 0)
                kv.push_back(v);
        return;
    }
    std::string path = model_dir(source) + "/generation_config.json";
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return;  // a model without one samples with Lantern's defaults, then as now
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("%s: cannot open", path.c_str());
    nlohmann::json j = json_parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), path);
    if (!j.is_object()) fail("%s: expected a JSON object", path.c_str());
    std::map<std::string, std::string> gguf_key;
    for (auto& [key, name] : SAMPLING_KEYS) gguf_key[name] = key;
    // do_sample false means greedy whatever the temperature says (Hugging
    // Face's rule, and cli_flags.cpp's): llama.cpp has no such key, so its
    // temperature says it, 0, for llama.cpp as well.
    bool greedy = !json_bool(j, "do_sample", true, path);
    std::vector<std::string> skipped;
    for (auto& [name, x] : j.items()) {
        bool sampling = gguf_key.count(name) > 0;
        GGUFValue v;
        if (!json_to_value(greedy && name == "temperature" ? nlohmann::json(0.0) : x, sampling ? gguf_key[name] : LANTERN_GENERATION + name, v)) {
            if (!x.is_null()) skipped.push_back(name);
            continue;
        }
        if (sampling) {  // llama.cpp's types: f32, top_k i32
            if (v.type == GGUF_STRING || v.type == GGUF_ARRAY || v.type == GGUF_BOOL)
                fail("%s: \"%s\" must be a number", path.c_str(), name.c_str());
            bool integer = name == "top_k";
            if (integer && (v.type == GGUF_F64 || v.i64 < INT32_MIN || v.i64 > INT32_MAX))
                fail("%s: \"top_k\" must be an integer", path.c_str());
            v.type = integer ? GGUF_I32 : GGUF_F32;
        }
        kv.push_back(v);
    }
    if (greedy && !j.contains("temperature")) kv.push_back(gguf_f32("general.sampling.temp", 0));
    if (!skipped.empty())
        LOGW(CAT_LOAD, "%s: %s not carried into the file (GGUF holds no objects or mixed lists)", path.c_str(), join(skipped, ", ").c_str());
}

// ---------------------------------------------------------------------------
// Re-quantization.

bool requantize_is_lossy(DType from, DType to) {
    return dtype_block_size(from) > 1 && to != from && to != DType::F32;
}

static std::string lower(std::string s) {
    for (char& ch : s) ch = (char)tolower((unsigned char)ch);
    return s;
}

void check_requantize(const std::string& file, const std::vector<TypeChange>& changes, const char* flag,
                      const std::string& to_name, bool force) {
    std::vector<std::string> held;  // the block formats that would be rounded again
    for (const TypeChange& c : changes) {
        std::string from = lower(dtype_name(c.from));
        if (requantize_is_lossy(c.from, c.to) && std::find(held.begin(), held.end(), from) == held.end()) held.push_back(from);
    }
    if (held.empty()) return;
    std::string types = join(held, ", ");
    if (!force)
        fail("%s: the weights are already %s; %s %s would quantize them a second time and add its rounding to theirs "
             "(quantize the original model, or add --force)", file.c_str(), types.c_str(), flag, to_name.c_str());
    LOGW(CAT_LOAD, "%s: re-quantizing %s weights to %s (--force): the rounding of both adds up", file.c_str(), types.c_str(),
         to_name.c_str());
}

DType check_quantize_model(const Model& m, DType to, bool force) {
    std::vector<TypeChange> changes;
    int kept = 0, matrices = 0;
    for (const TensorInfo& t : m.tensors) {
        if (t.shape.size() != 2) continue;
        matrices++;
        int cols = (int)t.shape[1];
        DType goal = block_fallback(to, cols);
        if (cols % dtype_block_size(goal) || goal == t.dtype) kept++;  // quantize_model leaves it as it is
        else changes.push_back({t.dtype, goal});
    }
    check_requantize(m.weights_path, changes, "--quant", lower(dtype_name(to)), force);
    if (changes.empty() && matrices && dtype_block_size(to) > 1)
        LOGI(CAT_LOAD, "%s: every matrix already is %s (or keeps its type): --quant %s keeps them as the file holds them",
             m.weights_path.c_str(), lower(dtype_name(to)).c_str(), lower(dtype_name(to)).c_str());
    return to;
}

// ---------------------------------------------------------------------------
// ./run info FILE.gguf

static std::string show_value(const GGUFValue& v) {
    auto num = [](uint32_t t, double x) {
        if (t == GGUF_F32 || t == GGUF_F64) return strprintf("%g", x);
        if (t == GGUF_BOOL) return std::string(x != 0 ? "true" : "false");
        return strprintf("%.0f", x);
    };
    auto clip = [](std::string s) {
        for (char& ch : s)
            if (ch == '\n') ch = ' ';
        return s.size() > 60 ? s.substr(0, 57) + "..." : s;
    };
    if (v.type == GGUF_STRING) return "\"" + clip(v.str) + "\"";
    if (v.type != GGUF_ARRAY) return num(v.type, v.type == GGUF_F32 || v.type == GGUF_F64 ? v.num : (double)v.i64);
    size_t n = v.elem_type == GGUF_STRING ? v.strs.size() : v.nums.size();
    std::string r = "[" + std::to_string(n) + " items: ";
    for (size_t i = 0; i < std::min<size_t>(n, 4); i++)
        r += (i ? ", " : "") + (v.elem_type == GGUF_STRING ? "\"" + clip(v.strs[i]) + "\"" : num(v.elem_type, v.nums[i]));
    return r + (n > 4 ? ", ...]" : "]");
}

int gguf_print_info(const std::string& path) {
    MappedGGUF g(path);
    const GGUFFile& f = g.f;
    printf("file       %s: GGUF v%u, %zu bytes, %zu values, %zu tensors, alignment %u, data at byte %zu\n\n", path.c_str(),
           f.version, f.size, f.kv.size(), f.tensors.size(), f.alignment, f.data_start);
    for (const GGUFValue& v : f.kv) printf("%-40s %s\n", v.key.c_str(), show_value(v).c_str());
    printf("\n%-28s %-8s %-16s %12s %12s\n", "tensor", "type", "ne", "bytes", "offset");
    size_t params = 0;
    for (const GGUFTensor& t : f.tensors) {
        std::string ne = "[";
        size_t count = 1;
        for (size_t i = 0; i < t.ne.size(); i++) ne += (i ? ", " : "") + std::to_string(t.ne[i]), count *= t.ne[i];
        params += count;
        printf("%-28s %-8s %-16s %12zu %12llu\n", t.name.c_str(), ggml_type_name(t.ggml_type), (ne + "]").c_str(), t.nbytes,
               (unsigned long long)t.offset);
    }
    printf("\n%zu tensors, %zu parameters\n", f.tensors.size(), params);
    // Then what the engine makes of it: the same checks as for a folder.
    Model m;
    gguf_load_model(m, path);
    for (auto& chk : m.checks) printf("check ok   %s\n", chk.c_str());
    return 0;
}

// --quant q8_0 (or another block format): every matrix becomes blocks in
// memory owned by the model. The mmap stays for the small vectors already
// copied and for a matrix that keeps its file type; the pages of each
// converted matrix are released as soon as its copy is made, so the
// resident set ends at the converted weights (not those plus the file), and
// peaks at them plus one source matrix: the embedding goes first, while
// nothing else is held (0.5B: 272 MB of bf16 for 145 MB of Q8_0).
void quantize_model(Model& m, DType to) {
    // A block holds 32 (k-quants: 256) weights of one row, so a row whose
    // length is not a multiple of it cannot be cut into blocks: k-quants fall
    // back to a 32-block format as llama-quantize does (quants.h), and a
    // matrix whose rows still do not divide (none in Qwen2.5, but small test
    // shapes have them) stays in its file type.
    int kept = 0;
    bool tied = m.lm_head.data == m.embed.data;
    for (Mat* w : weight_matrices(m)) {
        DType t = block_fallback(to, w->cols);
        if (w->cols % dtype_block_size(t)) { kept++; continue; }
        if (w->dtype == t) continue;  // already that type (a GGUF file's): its bytes stay
        m.owned.emplace_back();
        prefer_huge_pages(m.owned.back(), (size_t)w->rows * dtype_row_bytes(t, w->cols));
        Mat src = *w;
        *w = quantize_mat(src, t, m.owned.back());
        release_file_pages(m, src.data, src.bytes());
    }
    if (tied) m.lm_head = m.embed;
    if (kept) LOGW(CAT_LOAD, "--quant %s: %d matrices have rows that are not a multiple of 32 and keep their file type", dtype_name(to), kept);
}
