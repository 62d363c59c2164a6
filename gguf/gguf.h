// gguf.h — GGUF, the single-file format of llama.cpp, as a file format:
// read it (keys, values, tensor infos) and write it. It knows nothing of a
// Model or a Tokenizer: gguf_load.h turns a file into those, and
// gguf_convert.cpp (`./run convert`) writes one. See book/16-gguf-quantization.md.
#pragma once
#include <string>
#include <vector>
#include "common.h"

// GGUF's value types (the numbers are the file's).
enum GGUFType : uint32_t {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5, GGUF_F32 = 6,
    GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10, GGUF_I64 = 11, GGUF_F64 = 12,
};

// One metadata key/value. Numbers of every width are held as double (exact
// for every integer a model file uses) plus int64 for the large ones;
// arrays keep their element type and either strings or numbers.
struct GGUFValue {
    std::string key;
    uint32_t type = GGUF_U32;
    uint32_t elem_type = GGUF_U32;  // arrays: the element type
    double num = 0;                 // numbers and bools
    int64_t i64 = 0;                // integers, exactly
    std::string str;                // strings
    std::vector<std::string> strs;  // arrays of strings
    std::vector<double> nums;       // arrays of numbers
};

// One tensor info: ne[0] is the fastest-varying dimension (a row of a
// matrix), so a PyTorch [rows, cols] matrix has ne = {cols, rows}.
struct GGUFTensor {
    std::string name;
    uint32_t ggml_type = 0;
    std::vector<int64_t> ne;
    uint64_t offset = 0;  // from the start of the data section
    size_t nbytes = 0;
};

struct GGUFFile {
    std::string path;
    uint32_t version = 0;
    uint32_t alignment = 32;
    std::vector<GGUFValue> kv;
    std::vector<GGUFTensor> tensors;
    size_t data_start = 0;  // from the start of the file
    size_t size = 0;
};

// Parses header, metadata and tensor infos of a file held in memory and
// checks every tensor lies inside the data section, aligned, without
// overlap. Throws LanternError "PATH: problem" on anything wrong.
void gguf_parse(GGUFFile& f, const uint8_t* data, size_t size, const std::string& path);
const GGUFValue* gguf_find(const GGUFFile& f, const std::string& key);
// Name of a ggml type number ("Q4_K", "IQ2_XXS", ...) and its DType when
// Lantern can compute with it.
const char* ggml_type_name(uint32_t t);
bool ggml_type_to_dtype(uint32_t t, DType& out);
uint32_t dtype_to_ggml_type(DType t);

// The whole file mapped read-only (the caller munmaps it); throws naming the file.
void* gguf_map_file(const std::string& path, size_t& size);
// A file mapped and parsed, unmapped when this goes out of scope.
struct MappedGGUF {
    GGUFFile f;
    void* map = nullptr;
    size_t size = 0;
    explicit MappedGGUF(const std::string& path);
    ~MappedGGUF();
    MappedGGUF(const MappedGGUF&) = delete;
    MappedGGUF& operator=(const MappedGGUF&) = delete;
};

// The writer: the values and tensors in this order, data aligned to
// `alignment`. Each tensor's bytes come from `data` (already in its type).
struct GGUFTensorOut {
    GGUFTensor info;
    const void* data = nullptr;
};
void gguf_write(const std::string& path, const std::vector<GGUFValue>& kv, const std::vector<GGUFTensorOut>& tensors,
                uint32_t alignment = 32);
// Helpers to build values.
GGUFValue gguf_str(const std::string& key, const std::string& v);
GGUFValue gguf_u32(const std::string& key, uint32_t v);
GGUFValue gguf_f32(const std::string& key, float v);
GGUFValue gguf_bool(const std::string& key, bool v);

