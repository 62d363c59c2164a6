// config.json: parse_config on any bytes. Invariant: an accepted config has
// the shapes the forward pass relies on.
#include "fuzz.h"
#include "model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string path = fuzz_dir() + "/config.json";
    fuzz_write(path, data, size);
    try {
        Config c = parse_config(path);
        FUZZ_CHECK(c.hidden > 0 && c.n_layers > 0 && c.n_heads > 0 && c.n_kv_heads > 0 && c.vocab > 0);
        FUZZ_CHECK(c.hidden % c.n_heads == 0 && c.n_heads % c.n_kv_heads == 0 && c.head_dim % 2 == 0);
    } catch (const LanternError&) {
    }
    return 0;
}
