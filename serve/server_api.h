// server_api.h — the OpenAI API's JSON, in and out (server_api.cpp says
// why one file holds both halves).
//
// In: an HTTP request body, as text, to what the server will
// generate: the prompt text (after the chat template) and the generation
// settings. A pure function of its arguments (no socket, no model, no
// clock), so every way a body can be wrong is tested without a server
// (tests/test_server_request.cpp) and fuzzed (tests/fuzz/).
// Out: what a request made, as an answer, a stream chunk or an error.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>
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

// The prompt's token ids; one that cannot be encoded, is empty, or fills
// the context (`n_ctx`) throws a 400 ApiError; ctx_note says how far the
// context could go (net.h: ctx_hint).
std::vector<int> prompt_tokens(const GenerationRequest& r, const Tokenizer& tok, int n_ctx, const std::string& ctx_note);

// ---------------------------------------------------------------------------
// Out. Keys stay in the order written, as in the API docs.
using ApiJson = nlohmann::ordered_json;

// A request as its answer tells it: what was asked, and what was made.
struct Completion {
    GenerationRequest req;
    int id = 0;                      // "chatcmpl-<id>" or "cmpl-<id>"
    long created = 0;                // Unix time, for the "created" fields
    std::vector<int> prompt;         // the prompt's token ids
    GenerateResult result;           // once generation is done
    std::vector<SampleInfo> tokens;  // logprobs: every kept token's probabilities
};

std::string api_dump(const ApiJson& j);      // invalid UTF-8 (a quoted client byte) becomes U+FFFD
ApiJson error_json(const ApiError& e);       // {"error": {...}}; "type" server_error for a 5xx
const char* finish_reason(Finish f);         // generate()'s five reasons as OpenAI's two
ApiJson answer_json(const Completion& c, const std::string& model, const Tokenizer& tok);  // not streamed
// A stream chunk: a piece of text (chat: in "delta"), or the finish reason.
ApiJson chunk_json(const Completion& c, const std::string& model, const ApiJson& delta, const char* finish,
                   const ApiJson& logprobs = nullptr);
ApiJson usage_chunk_json(const Completion& c, const std::string& model);  // "include_usage": the last chunk
// OpenAI's logprobs object for the kept tokens [from, to) of `c.tokens`.
ApiJson logprobs_json(const Completion& c, const Tokenizer& tok, size_t from, size_t to);
ApiJson models_json(const std::string& model, long created);  // GET /v1/models
// GET /props: the settings a request without its own gets (llama.cpp's
// server names them "default_generation_settings"); the page starts from them.
ApiJson props_json(const std::string& model, const RequestDefaults& d);
