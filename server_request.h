// server_request.h — an HTTP request body, as text, to what the server will
// generate: the prompt text (after the chat template) and the generation
// settings. A pure function of its arguments (no socket, no model, no
// clock), so every way a body can be wrong is tested without a server
// (tests/test_server_request.cpp) and fuzzed (tests/fuzz/).
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "generate.h"

// An answer that is not an answer: a 4xx or 5xx status and OpenAI's error
// fields ({"message", "type", "param", "code"}).
struct ApiError {
    int status;
    std::string message, param, code;
};

struct GenerationRequest {
    bool chat = true;                  // /v1/chat/completions or /v1/completions
    bool stream = false, include_usage = false;
    std::string prompt_text;           // after the chat template
    GenerateParams gen;
    int top_logprobs = -1;             // -1: no logprobs; else alternatives per token (0-5)
};

// What a field the body leaves out becomes: the server's own command line,
// read like the CLI's (the model's generation_config.json, then the sampling
// flags on top), so `./run serve -t 0` answers greedily unless a request
// asks otherwise, and a request without settings gets what `./run` would.
struct RequestDefaults {
    GenerateParams gen;
    bool fixed_seed = false;          // serve --seed: the seed of requests without one (else a fresh one each)
    std::vector<std::string> models;  // what "model" may name; empty: anything
    ChatFormat chat;                  // the model's template: Qwen2.5's or Qwen3's (thinking on unless a request turns it off)
};

// Reads the body of POST /v1/chat/completions (chat) or /v1/completions.
// `fresh_seed` is used when neither the body nor the defaults fix a seed.
// Anything wrong throws ApiError naming the field ("param") and the problem
// ("code"): 400 invalid_json, invalid_type, invalid_value,
// missing_required_parameter, ...; 404 model_not_found for a model this
// server does not have.
GenerationRequest parse_generation_request(const std::string& body, bool chat, const RequestDefaults& d,
                                           uint32_t fresh_seed);
