// A GGUF file, any bytes: the header, metadata and tensor infos
// (gguf_parse), the whole model load through the GGUF adapter (gguf_load_model:
// hyper-parameters, tensor names, shapes against the config), and the
// tokenizer rebuilt from tokenizer.ggml.*. Invariants: every tensor
// gguf_parse accepts lies inside the data section, aligned, without
// overlap; anything wrong is a LanternError.
#include <algorithm>
#include <vector>
#include "fuzz.h"
#include "gguf/gguf.h"
#include "gguf/gguf_load.h"
#include "model.h"
#include "tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string path = fuzz_dir() + "/model.gguf";
    fuzz_write(path, data, size);
    try {
        GGUFFile f;
        gguf_parse(f, data, size, path);
        std::vector<std::pair<uint64_t, uint64_t>> spans;
        for (const GGUFTensor& t : f.tensors) {
            FUZZ_CHECK(t.offset % f.alignment == 0);
            FUZZ_CHECK(f.data_start <= size && t.offset <= size - f.data_start && t.nbytes <= size - f.data_start - t.offset);
            spans.push_back({t.offset, t.offset + t.nbytes});
        }
        std::sort(spans.begin(), spans.end());
        for (size_t i = 1; i < spans.size(); i++) FUZZ_CHECK(spans[i].first >= spans[i - 1].second);
    } catch (const LanternError&) {
        return 0;  // the parser said no: the loaders below would say the same
    }
    try {
        Model m;
        gguf_load_model(m, path);
        for (const TensorInfo& t : m.tensors) FUZZ_CHECK(t.offset <= m.file_size && t.nbytes <= m.file_size - t.offset);
    } catch (const LanternError&) {
    }
    try {
        Tokenizer tok;
        gguf_load_tokenizer(tok, path);
        FUZZ_CHECK(tokenizer_vocab_size(tok) > 0);
    } catch (const LanternError&) {
    }
    return 0;
}
