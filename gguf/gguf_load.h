// gguf_load.h — a GGUF file as the engine's Model and Tokenizer.
//
// A .gguf file holds what a Hugging Face folder holds in several files:
// hyper-parameters (config.json), tensors (model.safetensors) and the
// tokenizer (tokenizer.json). These adapters read them with gguf.h and fill
// the structures model.h and tokenizer.h define, so the engine never sees
// which kind of file a model came from. generate.h:open_model is the one
// place that picks this or the folder's loader.
#pragma once
#include <string>
#include <vector>
#include "common.h"
#include "gguf/gguf.h"

struct Model;
struct Tokenizer;

// Mmap, parse, the family from general.architecture and the hyper-parameters
// into m.cfg, the tensors under the engine's (Hugging Face) names in
// m.tensors, then model.cpp:bind_weights. Throws naming the file and the problem.
void gguf_load_model(Model& m, const std::string& path);
// The tokenizer stored in the file (tokenizer.ggml.*).
void gguf_load_tokenizer(Tokenizer& tok, const std::string& path);
// ./run info FILE.gguf: metadata, the tensor table, then the checks of the model load.
int gguf_print_info(const std::string& path);

// ---------------------------------------------------------------------------
// Generation settings. A folder's generation_config.json travels inside the
// file: the four settings llama.cpp has standard keys for under those keys
// (llama.cpp's common.cpp takes them as its defaults too),
//   temperature         general.sampling.temp            f32 (0 when do_sample is false)
//   top_k               general.sampling.top_k           i32
//   top_p               general.sampling.top_p           f32
//   repetition_penalty  general.sampling.penalty_repeat  f32
// and every other key as lantern.generation.<its name> (eos_token_id,
// do_sample, ...). config.json's stop ids go in as lantern.eos_token_ids
// when the one tokenizer.ggml.eos_token_id cannot say them (gguf_load_model
// reads them back). book/16-gguf-quantization.md, Principle 5, argues keys
// over a file beside the .gguf.
//
// The settings a file carries, rebuilt as the generation_config.json text
// they stand for, so the one reader of that file (cli_flags.cpp:apply_generation_config)
// applies them and a converted model samples as its folder did. "" when the
// file carries none. A key of the wrong type (a string for a number, NaN)
// throws naming the file and the key; ranges are the reader's.
std::string gguf_generation_config(const std::string& path);
// ./run convert: the source's settings as those keys, appended to `kv`: a
// folder's generation_config.json (none when it has none), or the keys of a
// GGUF source as they are.
void gguf_generation_values(std::vector<GGUFValue>& kv, const std::string& source);

// ---------------------------------------------------------------------------
// Re-quantization. Weights a file already holds in a block format (Q8_0,
// Q4_K, ...) are only its rounding of the original; quantizing them again
// into another block format rounds the rounded values, and the two errors
// add up. Kept as they are (the same type) or widened to f32 (exact), they
// lose nothing.
bool requantize_is_lossy(DType from, DType to);
// One matrix's change of type, for check_requantize.
struct TypeChange {
    DType from, to;
};
// Refuses (one line naming `file`, the types it holds and `to_name`) when
// any change is lossy; with `force` warns once instead and returns. `flag`
// is the flag that asked ("--quant", "--type").
void check_requantize(const std::string& file, const std::vector<TypeChange>& changes, const char* flag,
                      const std::string& to_name, bool force);
// The changes --quant TO makes to the model's matrices (quantize_model below:
// a k-quant's fallback for rows of 32, a row no block divides keeps its
// type), checked as above; also says when nothing is left to do. Returns
// `to` (generate.cpp:engine_load passes it on to quantize_model).
DType check_quantize_model(const Model& m, DType to, bool force);
// Quantize every matrix to `to` (--quant q8_0, q4_0, ..., q6_k; quants.h),
// releasing the file pages of each converted matrix.
void quantize_model(Model& m, DType to = DType::Q8_0);
