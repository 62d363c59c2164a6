// model.cpp — from a Hugging Face folder to weights the forward pass can use.
//
// A model folder holds config.json (the shapes) and model.safetensors (the
// numbers). safetensors is deliberately simple:
//
//   [8 bytes: N, little-endian u64][N bytes: JSON header][data section]
//
// The header maps each tensor name to {dtype, shape, data_offsets:[begin,end]}
// with offsets relative to the start of the data section. We mmap the whole
// file and point at the numbers where they lie: nothing is copied, pages are
// read from disk only when touched, and the OS can share them between runs.
//
// Bigger models come in shards: model-00001-of-00004.safetensors, ... and
// model.safetensors.index.json, whose "weight_map" names the file of every
// tensor. Each shard is an ordinary safetensors file, mapped and checked the
// same way; the index only has to agree with what the shards hold.
#include "model.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include "json_read.h"
#include "logging.h"

using json = nlohmann::json;

Model::~Model() {
    for (MappedFile& f : files) munmap(f.map, f.size);
}

static bool is_dir(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_gguf_path(const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0) return true;
    char magic[4] = {};
    FILE* fp = fopen(path.c_str(), "rb");
    if (!fp) return false;
    size_t n = fread(magic, 1, 4, fp);
    fclose(fp);
    return n == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

std::string model_dir(const std::string& path) {
    if (is_dir(path) || is_gguf_path(path)) return path;  // a GGUF file holds config and tokenizer too
    size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

static std::string read_file(const std::string& path) {
    if (is_dir(path)) fail("%s: is a directory, not a file", path.c_str());  // ifstream would read it as empty
    std::ifstream f(path, std::ios::binary);
    if (!f) fail("%s: cannot open", path.c_str());
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// ---------------------------------------------------------------------------
// config.json
//
// Every number here later sizes an allocation or a loop, so each is read
// through json_read.h with a range: a file that says 2,000,000,000 layers is
// refused here, not by a failed allocation after the first tensor check, and
// 4294967304 is not quietly read as 8. The bounds are far above any real
// model (Llama 3 405B: hidden 16384, 126 layers, vocab 128256). The same
// bounds (model.h) hold for a GGUF file's hyper-parameters (gguf_load.cpp).

Config parse_config(const std::string& path) {
    json j = json_parse(read_file(path), path);
    if (!j.is_object()) fail("%s: expected a JSON object", path.c_str());
    std::string type = json_str(j, "model_type", ARCHS[0].model_type, path);
    Config c;
    if (const Arch* a = arch_by_model_type(type)) c.arch = a;
    else LOGW(CAT_LOAD, "%s: model_type is \"%s\", not %s; trying anyway", path.c_str(), type.c_str(), arch_names("or").c_str());
    auto need_int = [&](const char* key, int hi) {
        if (!json_has(j, key)) fail("%s: missing key \"%s\"", path.c_str(), key);
        return (int)json_int(j, key, 0, 1, hi, path);
    };
    c.hidden = need_int("hidden_size", MAX_HIDDEN);
    c.intermediate = need_int("intermediate_size", MAX_INTERMEDIATE);
    c.n_layers = need_int("num_hidden_layers", MAX_LAYERS);
    c.n_heads = need_int("num_attention_heads", MAX_HEADS);
    c.n_kv_heads = (int)json_int(j, "num_key_value_heads", c.n_heads, 1, MAX_HEADS, path);
    c.vocab = need_int("vocab_size", MAX_VOCAB);
    c.max_pos = (int)json_int(j, "max_position_embeddings", 32768, 1, MAX_POSITIONS, path);
    if (c.n_heads % c.n_kv_heads) fail("%s: num_attention_heads %d is not a multiple of num_key_value_heads %d", path.c_str(), c.n_heads, c.n_kv_heads);
    // A family with Arch::head_dim_stated states head_dim (Qwen3-0.6B: 128
    // although hidden/heads = 64); without the key it is the quotient.
    if (json_has(j, "head_dim") && !j["head_dim"].is_null()) c.head_dim = (int)json_int(j, "head_dim", 0, 1, MAX_HIDDEN, path);
    else if (c.hidden % c.n_heads) fail("%s: hidden_size %d is not a multiple of num_attention_heads %d", path.c_str(), c.hidden, c.n_heads);
    else c.head_dim = c.hidden / c.n_heads;
    if (c.head_dim % 2) fail("%s: head dimension %d must be even for RoPE", path.c_str(), c.head_dim);
    c.eps = (float)json_number(j, "rms_norm_eps", 1e-6, 0, 1, path);
    c.rope_theta = (float)json_number(j, "rope_theta", 10000.0, 1, 1e12, path);
    c.tie_embeddings = json_bool(j, "tie_word_embeddings", c.arch->tied_head, path);
    c.torch_dtype = json_str(j, "torch_dtype", "?", path);
    c.bos_id = (int)json_int(j, "bos_token_id", -1, 0, MAX_VOCAB, path);
    if (json_has(j, "eos_token_id")) {  // one id or a list of them
        const json& e = j["eos_token_id"];
        if (e.is_array()) {
            if (e.size() > 64) fail("%s: \"eos_token_id\" lists %zu ids; at most 64 are allowed", path.c_str(), e.size());
            for (size_t i = 0; i < e.size(); i++)
                c.eos_ids.push_back((int)json_as_int(e[i], strprintf("eos_token_id[%zu]", i), 0, MAX_VOCAB, path));
        } else {
            c.eos_ids.push_back((int)json_as_int(e, "eos_token_id", 0, MAX_VOCAB, path));
        }
    }
    return c;
}

// ---------------------------------------------------------------------------
// safetensors

static bool parse_dtype(const std::string& s, DType& t, size_t& elem) {
    if (s == "F32") { t = DType::F32; elem = 4; return true; }
    if (s == "BF16") { t = DType::BF16; elem = 2; return true; }
    if (s == "F16") { t = DType::F16; elem = 2; return true; }
    return false;
}

void parse_safetensors(Model& m) {
    const char* path = m.weights_path.c_str();
    const uint8_t* base = (const uint8_t*)m.map;
    if (m.file_size < 8) fail("%s: file is %zu bytes, too short for a safetensors header", path, m.file_size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | base[i];  // little-endian u64
    // The format caps the header at 100 MB; anything past the end is corruption.
    if (n == 0 || n > 100000000ull || 8 + n > m.file_size)
        fail("%s: header length %llu does not fit in a %zu-byte file (truncated or not safetensors)",
             path, (unsigned long long)n, m.file_size);
    m.header_len = n;
    json h = json_parse(std::string((const char*)base + 8, n), std::string(path) + ": header (from byte 8)");
    if (!h.is_object()) fail("%s: header is not a JSON object", path);
    size_t data_start = 8 + n, data_size = m.file_size - data_start;

    m.tensors.clear();
    for (auto& [name, v] : h.items()) {
        if (name == "__metadata__") continue;
        TensorInfo t;
        t.name = name;
        size_t elem = 0;
        if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string())
            fail("%s: tensor %s has no dtype", path, name.c_str());
        if (!parse_dtype(v["dtype"].get<std::string>(), t.dtype, elem))
            fail("%s: tensor %s has unsupported dtype %s (BF16, F16 and F32 are)", path, name.c_str(),
                 v["dtype"].get<std::string>().c_str());
        if (!v.contains("shape") || !v["shape"].is_array()) fail("%s: tensor %s has no shape", path, name.c_str());
        size_t count = 1;
        for (const json& d : v["shape"]) {
            if (!d.is_number_integer() || d.get<long long>() < 0) fail("%s: tensor %s has a bad shape", path, name.c_str());
            size_t dim = (size_t)d.get<int64_t>();
            if (dim && count > SIZE_MAX / 8 / dim) fail("%s: tensor %s has a shape too large to address", path, name.c_str());
            t.shape.push_back((int64_t)dim);
            count *= dim;
        }
        const json& off = v.value("data_offsets", json());
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            fail("%s: tensor %s has bad data_offsets", path, name.c_str());
        size_t b = off[0].get<size_t>(), e = off[1].get<size_t>();
        if (b > e || e > data_size)
            fail("%s: tensor %s data [%zu, %zu) lies outside the %zu-byte data section (truncated file?)",
                 path, name.c_str(), b, e, data_size);
        if (e - b != count * elem)
            fail("%s: tensor %s has %zu bytes but its shape and dtype need %zu", path, name.c_str(), e - b, count * elem);
        t.offset = data_start + b;
        t.nbytes = e - b;
        t.data = base + t.offset;
        m.tensors.push_back(t);
    }
    // No two tensors may share bytes: sort by offset and compare neighbours.
    std::vector<const TensorInfo*> byoff;
    for (auto& t : m.tensors) byoff.push_back(&t);
    std::sort(byoff.begin(), byoff.end(), [](auto a, auto b) { return a->offset < b->offset; });
    for (size_t i = 1; i < byoff.size(); i++)
        if (byoff[i]->offset < byoff[i - 1]->offset + byoff[i - 1]->nbytes)
            fail("%s: tensors %s and %s overlap", path, byoff[i - 1]->name.c_str(), byoff[i]->name.c_str());
    std::sort(m.tensors.begin(), m.tensors.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
}

const TensorInfo* find_tensor(const Model& m, const std::string& name) {
    for (auto& t : m.tensors)
        if (t.name == name) return &t;
    return nullptr;
}

size_t weights_bytes(const Model& m) {
    size_t n = 0;
    for (const MappedFile& f : m.files) n += f.size;
    return n;
}

// The published shapes of the model's family (arch.cpp), told apart by
// hidden size and head counts; fewer layers (a generated test model) are
// named as such.
std::string model_family(const Config& c) {
    for (const PublishedShape& k : c.arch->published)
        if (k.hidden == c.hidden && k.heads == c.n_heads && k.kv_heads == c.n_kv_heads) {
            if (k.layers == c.n_layers) return k.name;
            return std::string(k.name) + " shape, " + std::to_string(c.n_layers) + " of its " + std::to_string(k.layers) + " layers";
        }
    return std::string(c.arch->title) + " architecture, not a published size";
}

size_t parameter_count(const Model& m) {
    size_t n = 0;
    for (auto& t : m.tensors) {
        size_t c = 1;
        for (auto d : t.shape) c *= (size_t)d;
        n += c;
    }
    return n;
}

// ---------------------------------------------------------------------------
// Named views: every tensor the forward pass needs, checked against the config.

static const TensorInfo& need(const Model& m, const std::string& name, std::vector<int64_t> shape) {
    const TensorInfo* t = find_tensor(m, name);
    // A GGUF file (whose folder is the file itself) names tensors its own way
    // and writes shapes fastest dimension first.
    bool gguf = m.dir == m.weights_path;
    std::string shown = gguf ? arch_translate(*m.cfg.arch, name, true) : name;
    if (!t) fail("%s: tensor %s is missing", m.weights_path.c_str(), shown.c_str());
    if (gguf && t->shape != shape) {
        std::string s = "[", want = "[";
        for (size_t i = t->shape.size(); i-- > 0;) s += std::to_string(t->shape[i]) + (i ? ", " : "]");
        for (size_t i = shape.size(); i-- > 0;) want += std::to_string(shape[i]) + (i ? ", " : "]");
        fail("%s: tensor %s has ne %s, the hyper-parameters imply %s", m.weights_path.c_str(), shown.c_str(), s.c_str(), want.c_str());
    }
    if (t->shape != shape) {
        auto str = [](const std::vector<int64_t>& s) {
            std::string r = "[";
            for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
            return r + "]";
        };
        fail("%s: tensor %s has shape %s, config.json implies %s", m.files[t->file].path.c_str(), name.c_str(),
             str(t->shape).c_str(), str(shape).c_str());
    }
    return *t;
}

static Mat need_mat(const Model& m, const std::string& name, int rows, int cols) {
    const TensorInfo& t = need(m, name, {rows, cols});
    Mat w;
    w.dtype = t.dtype;
    w.rows = rows;
    w.cols = cols;
    w.data = t.data;
    return w;
}

// Norm weights and biases are tiny, so they are widened to f32 once.
static std::vector<float> need_vec(const Model& m, const std::string& name, int n) {
    const TensorInfo& t = need(m, name, {n});
    Mat w{t.dtype, 1, n, t.data};
    std::vector<float> v(n);
    mat_row_to_f32(w, 0, v.data());
    return v;
}

// mmap one file read-only and make it the one parse_safetensors reads.
static void map_file(Model& m, const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) fail("%s: cannot open (%s)", path.c_str(), strerror(errno));
    struct stat st;
    fstat(fd, &st);
    size_t size = (size_t)st.st_size;
    if (size == 0) {
        close(fd);
        fail("%s: file is empty", path.c_str());
    }
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) fail("%s: mmap failed (%s)", path.c_str(), strerror(errno));
    m.files.push_back({path, p, size});
    m.weights_path = path;
    m.map = p;
    m.file_size = size;
}

// The index: {"metadata": {...}, "weight_map": {"tensor name": "shard file", ...}}.
// Every shard is mapped and parsed alone; then the index and the shards must
// agree exactly: each listed tensor in the file the index names, no tensor
// in two shards, no tensor that the index does not list.
static void load_shards(Model& m, const std::string& index_path) {
    json ix = json_parse(read_file(index_path), index_path);
    if (!ix.is_object() || !ix.contains("weight_map") || !ix["weight_map"].is_object() || ix["weight_map"].empty())
        fail("%s: no \"weight_map\" object naming the shard of each tensor", index_path.c_str());
    std::map<std::string, std::string> where;  // tensor -> shard file, as the index says
    std::vector<std::string> shard_names;       // each file once
    for (auto& [name, file] : ix["weight_map"].items()) {
        if (!file.is_string() || file.get<std::string>().empty() || file.get<std::string>().find('/') != std::string::npos)
            fail("%s: weight_map[\"%s\"] must be the name of a file in the folder", index_path.c_str(), name.c_str());
        where[name] = file.get<std::string>();
        if (std::find(shard_names.begin(), shard_names.end(), where[name]) == shard_names.end())
            shard_names.push_back(where[name]);
    }
    std::sort(shard_names.begin(), shard_names.end());  // model-00001-of-..., model-00002-of-..., ...
    std::vector<TensorInfo> all;
    std::map<std::string, std::string> found;  // tensor -> shard it was found in
    for (size_t k = 0; k < shard_names.size(); k++) {
        std::string path = m.dir + "/" + shard_names[k];
        if (access(path.c_str(), F_OK) != 0)
            fail("%s: shard %s (listed in %s) is missing", path.c_str(), shard_names[k].c_str(), index_path.c_str());
        map_file(m, path);
        parse_safetensors(m);
        for (TensorInfo& t : m.tensors) {
            if (found.count(t.name))
                fail("%s: tensor %s is also in %s (a tensor must be in one shard)", path.c_str(), t.name.c_str(),
                     found[t.name].c_str());
            if (!where.count(t.name))
                fail("%s: tensor %s is not listed in %s", path.c_str(), t.name.c_str(), index_path.c_str());
            if (where[t.name] != shard_names[k])
                fail("%s: tensor %s is here but %s places it in %s", path.c_str(), t.name.c_str(), index_path.c_str(),
                     where[t.name].c_str());
            found[t.name] = shard_names[k];
            t.file = (int)m.files.size() - 1;
            all.push_back(t);
        }
    }
    for (auto& [name, file] : where)
        if (!found.count(name))
            fail("%s: tensor %s is listed in %s but the shard has no such tensor", (m.dir + "/" + file).c_str(),
                 name.c_str(), index_path.c_str());
    m.tensors = all;
    m.weights_path = index_path;
    // map/file_size: the largest shard (what `run bench` reads for its bandwidth probe).
    for (MappedFile& f : m.files)
        if (f.size > m.file_size) m.map = f.map, m.file_size = f.size;
}

void load_model(Model& m, const std::string& path) {
    struct stat st0;
    if (stat(path.c_str(), &st0) != 0) fail("%s: no such model folder or file", path.c_str());
    if (is_gguf_path(path)) fail("%s: a GGUF file; gguf_load.h:gguf_load_model reads it", path.c_str());
    m.dir = model_dir(path);
    m.cfg = parse_config(m.dir + "/config.json");

    // One file, or shards and their index. A folder with both uses the single file.
    std::string single = is_dir(path) ? m.dir + "/model.safetensors" : path;
    std::string index = m.dir + "/model.safetensors.index.json";
    bool sharded = is_dir(path) ? access(single.c_str(), F_OK) != 0 && access(index.c_str(), F_OK) == 0
                                : path.size() > 11 && path.compare(path.size() - 11, 11, ".index.json") == 0;
    if (sharded) {
        if (!is_dir(path)) index = path;
        load_shards(m, index);
        m.checks.push_back(std::to_string(m.files.size()) + " shards: each header fits in its file");
        m.checks.push_back("every tensor: supported dtype, byte count matches shape, inside its shard");
        m.checks.push_back("no two tensors overlap; the index and the shards list the same tensors, each once");
    } else {
        map_file(m, single);
        parse_safetensors(m);
        m.checks.push_back("header length " + std::to_string(m.header_len) + " bytes fits in the file");
        m.checks.push_back("every tensor: supported dtype, byte count matches shape, inside the file");
        m.checks.push_back("no two tensors overlap");
    }
    bind_weights(m);
}

// Each tensor is asked for by its role; the family's row (arch.cpp) says
// what the file calls it, and its features which tensors there must be.
void bind_weights(Model& m) {
    const Config& c = m.cfg;
    const Arch& a = *c.arch;
    int hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
    m.embed = need_mat(m, arch_hf_name(a, TensorRole::Embed, -1), c.vocab, c.hidden);
    m.final_norm = need_vec(m, arch_hf_name(a, TensorRole::FinalNorm, -1), c.hidden);
    std::string head = arch_hf_name(a, TensorRole::LmHead, -1);
    if (find_tensor(m, head)) m.lm_head = need_mat(m, head, c.vocab, c.hidden);
    else if (c.tie_embeddings) m.lm_head = m.embed;
    else fail("%s: tensor %s is missing and tie_word_embeddings is false", m.weights_path.c_str(), head.c_str());

    m.layers.resize(c.n_layers);
    for (int l = 0; l < c.n_layers; l++) {
        auto name = [&](TensorRole r) { return arch_hf_name(a, r, l); };
        LayerWeights& L = m.layers[l];
        L.attn_norm = need_vec(m, name(TensorRole::AttnNorm), c.hidden);
        L.ffn_norm = need_vec(m, name(TensorRole::FfnNorm), c.hidden);
        L.wq = need_mat(m, name(TensorRole::Q), q_dim, c.hidden);
        L.wk = need_mat(m, name(TensorRole::K), kv_dim, c.hidden);
        L.wv = need_mat(m, name(TensorRole::V), kv_dim, c.hidden);
        if (a.qkv_bias) {
            L.bq = need_vec(m, name(TensorRole::QBias), q_dim);
            L.bk = need_vec(m, name(TensorRole::KBias), kv_dim);
            L.bv = need_vec(m, name(TensorRole::VBias), kv_dim);
        } else {
            // No biases: zeros keep the one code path of net.cpp (adding
            // 0.0f changes no value).
            L.bq.assign(q_dim, 0.0f), L.bk.assign(kv_dim, 0.0f), L.bv.assign(kv_dim, 0.0f);
        }
        if (a.qk_norm) {  // a norm over each head of q and of k
            L.q_norm = need_vec(m, name(TensorRole::QNorm), hd);
            L.k_norm = need_vec(m, name(TensorRole::KNorm), hd);
        }
        L.wo = need_mat(m, name(TensorRole::O), c.hidden, q_dim);
        L.w_gate = need_mat(m, name(TensorRole::Gate), c.intermediate, c.hidden);
        L.w_up = need_mat(m, name(TensorRole::Up), c.intermediate, c.hidden);
        L.w_down = need_mat(m, name(TensorRole::Down), c.hidden, c.intermediate);
    }
    m.checks.push_back("all " + std::to_string(m.tensors.size()) + " tensors present with the shapes " +
                       (m.dir == m.weights_path ? "the hyper-parameters imply" : "config.json implies"));
    LOGI(CAT_LOAD, "loaded %s: %zu tensors, %zu parameters, %d layers", m.weights_path.c_str(), m.tensors.size(),
         parameter_count(m), c.n_layers);
}

// Pages of a weight file that nothing reads any more go back to the OS.
// The file is mapped read-only and private, so its pages are never written:
// MADV_DONTNEED only takes them out of this process's resident set (the OS
// keeps them in its file cache while it has room), and should the range be
// read again the pages come back from the file unchanged. Whole pages inside
// [p, p + n) only: a page shared with a neighbouring tensor stays. Memory
// that is not a mapped weight file is left alone (there, DONTNEED would
// zero it).
void release_file_pages(const Model& m, const void* p, size_t n) {
    uintptr_t b = (uintptr_t)p, e = b + n;
    auto inside = [&](const void* map, size_t size) { return b >= (uintptr_t)map && e <= (uintptr_t)map + size; };
    bool mapped = m.map && inside(m.map, m.file_size);  // a GGUF file is m.map alone
    for (const MappedFile& f : m.files) mapped = mapped || inside(f.map, f.size);
    if (!mapped) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    b = (b + page - 1) & ~(page - 1);
    e &= ~(page - 1);
    if (e > b) madvise((void*)b, e - b, MADV_DONTNEED);
}

// Decode reads every converted weight once per token. In pages of 4 KB the
// 0.5B model's Q8_0 copy is 128,000 pages, each a TLB miss on every token;
// in 2 MB pages it is 250, so both a plain read of the weights and the
// decode products run faster (book/A-measurements.md measures by how
// much). The storage is reserved (address space only, no
// page touched yet) and marked, so the pages the conversion then writes
// come as huge pages where the kernel has them (transparent huge pages in
// "madvise" or "always" mode); elsewhere the call does nothing.
void prefer_huge_pages(std::vector<uint8_t>& v, size_t bytes) {
    v.reserve(bytes);
    const uintptr_t huge = 2u << 20;
    uintptr_t b = ((uintptr_t)v.data() + huge - 1) & ~(huge - 1), e = ((uintptr_t)v.data() + bytes) & ~(huge - 1);
    if (e > b) madvise((void*)b, e - b, MADV_HUGEPAGE);
}

// Every matrix the forward pass multiplies by, each once: the embedding
// first (while nothing else is converted, the resident set peaks lowest),
// the LM head when it is a matrix of its own, then each layer's seven. A
// tied head is the embedding: a caller that changes the embedding copies
// it to lm_head after.
std::vector<Mat*> weight_matrices(Model& m) {
    std::vector<Mat*> all = {&m.embed};
    if (m.lm_head.data != m.embed.data) all.push_back(&m.lm_head);
    for (LayerWeights& L : m.layers)
        for (Mat* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) all.push_back(w);
    return all;
}
