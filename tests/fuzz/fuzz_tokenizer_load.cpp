// tokenizer.json: tokenizer_load on any bytes (the hand-written scanner of
// vocab and merges, then nlohmann for the rest). Invariant: a loaded
// tokenizer encodes and decodes a short ASCII text without error.
#include "fuzz.h"
#include "tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string path = fuzz_dir() + "/tokenizer.json";
    fuzz_write(path, data, size);
    Tokenizer tok;
    try {
        tokenizer_load(tok, path);
    } catch (const LanternError&) {
        return 0;
    }
    try {
        std::vector<int> ids = tokenizer_encode(tok, "low lower ab");
        tokenizer_decode(tok, ids);
    } catch (const LanternError&) {
    }
    return 0;
}
