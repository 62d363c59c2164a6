// The server's request parser on any body (the first byte picks chat or
// completions). Invariants: the answer is a request, a 400 ApiError, or a
// 404 for a model other than "m"; an accepted request's settings lie in the
// API's ranges.
#include "fuzz.h"
#include "serve/server_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    fuzz_dir();
    static RequestDefaults defaults;
    defaults.models = {"m"};
    try {
        GenerationRequest r = parse_generation_request(std::string((const char*)data + 1, size - 1), data[0] & 1, defaults, 7);
        const SamplerParams& s = r.gen.sampling;
        FUZZ_CHECK(s.temperature >= 0 && s.temperature <= 2 && s.top_p > 0 && s.top_p <= 1 && s.top_k >= 0 && s.repeat_penalty > 0);
        FUZZ_CHECK(r.gen.n_predict >= 1 && r.gen.stop_strings.size() <= 4);
    } catch (const ApiError& e) {
        FUZZ_CHECK((e.status == 400 || (e.status == 404 && e.code == "model_not_found")) && !e.message.empty());
    }
    return 0;
}
