// The header of a GGUF file: gguf_parse on any bytes (the values, the
// tensor table, the alignment). Invariant: every tensor it accepts lies
// inside the data section, aligned, and no two overlap.
#include <algorithm>
#include <vector>
#include "fuzz.h"
#include "gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz_dir();
    GGUFFile f;
    try {
        gguf_parse(f, data, size, "fuzz.gguf");
        FUZZ_CHECK(f.data_start <= size);
        std::vector<std::pair<uint64_t, size_t>> spans;
        for (const GGUFTensor& t : f.tensors) {
            FUZZ_CHECK(t.offset % f.alignment == 0);
            FUZZ_CHECK(t.offset <= size - f.data_start && t.nbytes <= size - f.data_start - t.offset);
            spans.push_back({t.offset, t.nbytes});
        }
        std::sort(spans.begin(), spans.end());
        for (size_t i = 1; i < spans.size(); i++) FUZZ_CHECK(spans[i - 1].first + spans[i - 1].second <= spans[i].first);
    } catch (const LanternError&) {
    }
    return 0;
}
