// chapters/safetensors/stub.cpp — reading a safetensors header
// (book/03-loading.md, "The file layout" and "The checks").
//
// load_model() mmaps model.safetensors and calls this to find every tensor
// in it; the forward pass then reads the weights where they lie in the
// file. `make exercise EX=safetensors` builds this file into the engine in
// place of model.cpp's parse_safetensors and checks it.
#include <algorithm>
#include <nlohmann/json.hpp>
#include "model.h"

using json = nlohmann::json;

// TODO(student): parse and check the header of m's file.
//
//   [8 bytes: N, u64 little-endian][N bytes: JSON header][data section]
//
// In:   m.map           the whole file, mmapped: (const uint8_t*)m.map
//       m.file_size     its size in bytes
//       m.weights_path  its name, for error messages
// Out:  m.header_len    N
//       m.tensors       one TensorInfo per tensor (model.h), sorted by offset:
//         name    the JSON key
//         dtype   DType::F32, DType::F16 or DType::BF16 ("F32", "F16", "BF16")
//         shape   the "shape" array
//         offset  where the tensor starts, from the start of the FILE:
//                 8 + N + begin, with [begin, end] = "data_offsets"
//         nbytes  end - begin
//         data    the address: (const uint8_t*)m.map + offset
//
// Skip the key "__metadata__": it is not a tensor. Refuse a damaged file
// with fail("%s: ...", m.weights_path.c_str(), ...) (common.h): it throws
// LanternError, which ./run prints as one "error: ..." line. The checker
// feeds you damaged files; refuse each of these:
//   - fewer than 8 bytes; N = 0; N > 100,000,000; 8 + N past the end
//   - a header that is not valid JSON, or not a JSON object
//   - a tensor without a "dtype" string, or a dtype other than the three
//   - a "shape" that is not an array of integers >= 0
//   - "data_offsets" not two unsigned integers with begin <= end <= the
//     data section's size (file_size - 8 - N)
//   - end - begin different from (product of the shape) x (bytes per element)
//   - two tensors whose byte ranges overlap
//
// nlohmann::json in brief: json::parse(std::string) (throws
// json::parse_error: catch it and call fail()), h.is_object(),
// for (auto& [key, v] : h.items()), v.contains("dtype"), v["dtype"].is_string(),
// v["dtype"].get<std::string>(), x.is_array(), x.is_number_integer(),
// x.is_number_unsigned(), x.get<int64_t>(), x.size().
//
// Hints: byte 0 of N is the least significant. Compare N with 100 MB
// before computing 8 + N: for a huge N that sum wraps around.
void parse_safetensors(Model& m) {
    m.tensors.clear();  // the stub: finds no tensors
}
