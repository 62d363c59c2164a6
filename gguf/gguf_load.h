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
