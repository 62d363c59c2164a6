// Decoding Qwen ids two ways: tokenizer_decode on all of them, and a
// StreamDecoder one id at a time. Invariants: both give the same text, it
// is valid UTF-8, and each streamed piece is valid UTF-8 on its own.
#include <cstring>
#include "fuzz.h"
#include "tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz_dir();
    static Tokenizer tok;
    static bool loaded = (tokenizer_load(tok, "models/qwen-tokenizer"), true);
    (void)loaded;
    std::vector<int> ids;
    for (size_t i = 0; i + 4 <= size; i += 4) {
        uint32_t v;
        memcpy(&v, data + i, 4);
        ids.push_back((int)(v % (uint32_t)tokenizer_vocab_size(tok)));
    }
    std::string whole = tokenizer_decode(tok, ids), streamed;
    StreamDecoder sd;
    for (int id : ids) {
        std::string piece = sd.push(tok, id);
        FUZZ_CHECK(utf8_sanitize(piece) == piece);
        streamed += piece;
    }
    streamed += sd.flush();
    FUZZ_CHECK(streamed == whole);
    FUZZ_CHECK(utf8_sanitize(whole) == whole);
    return 0;
}
