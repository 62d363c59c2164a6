// device.h — where the forward pass runs: the CPU, or an NVIDIA GPU in a
// build made with `make cuda` (book/14-cuda.md).
//
// The command line only records the choice (--device, cli.cpp, into
// EngineOptions::device); engine_load applies it once (net_cuda.h:
// device_use gives the Net the GPU's backend), which is where "this build
// has no CUDA" is found out. forward() (net.cpp) runs whichever backend the
// Net has, without asking which.
#pragma once
#include <string>
#include "common.h"

enum class Device { CPU, CUDA };

inline const char* device_name(Device d) { return d == Device::CUDA ? "cuda" : "cpu"; }

// "cpu" or "cuda" (the --device flag's value); anything else is refused.
// Whether CUDA can be used here is device_use's question, not this one's.
inline Device parse_device(const std::string& name) {
    if (name == "cpu") return Device::CPU;
    if (name == "cuda") return Device::CUDA;
    fail("--device: \"%s\" is not cpu or cuda", name.c_str());
}
