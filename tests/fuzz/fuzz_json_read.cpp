// json_read.h on any bytes, the way generation_config.json and request
// bodies are read: parse, then take every key of the top object as each
// type in turn. Invariant: a value handed out lies in the asked range.
#include "fuzz.h"
#include "json_read.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz_dir();
    try {
        nlohmann::json j = json_parse(std::string((const char*)data, size), "generation_config.json");
        if (!j.is_object()) return 0;
        for (auto& item : j.items()) {
            const char* key = item.key().c_str();
            try { long long v = json_int(j, key, 0, -5, 1 << 30, "g"); FUZZ_CHECK(v >= -5 && v <= (1 << 30)); } catch (const LanternError&) {}
            try { double v = json_number(j, key, 0, 0, 2, "g"); FUZZ_CHECK(v >= 0 && v <= 2); } catch (const LanternError&) {}
            try { json_bool(j, key, false, "g"); } catch (const LanternError&) {}
            try { json_str(j, key, "", "g"); } catch (const LanternError&) {}
            std::string dumped = item.value().dump();  // the depth limit keeps this recursion short
        }
    } catch (const LanternError&) {
    }
    return 0;
}
