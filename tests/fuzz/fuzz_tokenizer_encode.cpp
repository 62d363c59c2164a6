// tokenizer_encode with Qwen's tokenizer on any bytes. Invariants: invalid
// UTF-8 is refused with a LanternError, valid text encodes, and ASCII text
// decodes back to itself.
#include "fuzz.h"
#include "tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz_dir();
    static Tokenizer tok;
    static bool loaded = (tokenizer_load(tok, "models/qwen-tokenizer"), true);
    (void)loaded;
    std::string text((const char*)data, size);
    std::vector<int> ids;
    try {
        ids = tokenizer_encode(tok, text);
    } catch (const LanternError&) {
        FUZZ_CHECK(utf8_sanitize(text) != text);  // only invalid UTF-8 may be refused
        return 0;
    }
    bool ascii = true;
    for (unsigned char c : text) ascii = ascii && c < 0x80;
    if (ascii) FUZZ_CHECK(tokenizer_decode(tok, ids) == text);
    return 0;
}
