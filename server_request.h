// server_request.h — an HTTP request body, as text, to what the server will
// generate: the prompt text (after the chat template) and the generation
// settings. A pure function of its arguments (no socket, no model, no
// clock), so every way a body can be wrong is tested without a server
// (tests/test_server_request.cpp) and fuzzed (tests/fuzz/).
#pragma once
#include <cstdint>
#include <string>
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

const int DEFAULT_MAX_TOKENS = 256;  // like the command line's -n

// Reads the body of POST /v1/chat/completions (chat) or /v1/completions.
// `seed` is used when the body has none. Anything wrong throws ApiError 400
// naming the field ("param") and the problem ("code": invalid_json,
// invalid_type, invalid_value, missing_required_parameter, ...).
GenerationRequest parse_generation_request(const std::string& body, bool chat, uint32_t seed);
