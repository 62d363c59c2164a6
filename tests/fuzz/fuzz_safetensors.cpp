// The safetensors header of a model file: parse_safetensors on any bytes.
// Invariant: every tensor it accepts lies inside the file.
#include <cstring>
#include <vector>
#include "fuzz.h"
#include "model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz_dir();
    std::vector<uint8_t> bytes(data, data + size);  // the "mmapped file"
    Model m;
    m.weights_path = "fuzz.safetensors";
    m.map = bytes.data();
    m.file_size = bytes.size();
    try {
        parse_safetensors(m);
        for (const TensorInfo& t : m.tensors) FUZZ_CHECK(t.offset <= size && t.nbytes <= size - t.offset);
    } catch (const LanternError&) {
    }
    m.map = nullptr;  // not mmapped: ~Model must not munmap it
    return 0;
}
