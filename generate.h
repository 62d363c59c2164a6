// generate.h — the generation API: load an engine, prompt tokens in, sampled
// text out.
//
// The command line (`./run "prompt"`, `./run chat`, run.cpp), the HTTP
// server (server.cpp) and the inspection tools (inspect.cpp, bench.cpp) all
// load the model through engine_load(); the first two then call generate().
// Both are written in generate.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>
#include "device.h"
#include "cpu/kernel_sets.h"
#include "net.h"
#include "sampler.h"
#include "tokenizer.h"

// ---------------------------------------------------------------------------
// The one load sequence: kernels -> model -> quantize -> tokenizer -> KV cache.
// The fields are the command line's engine flags (cli_flags.cpp).
struct EngineOptions {
    std::string model;                    // folder or .safetensors; "" = default_model_path()
    int ctx = 0;                          // KV cache positions; 0 = min(4096, the model's max)
    int threads = 0;                      // 0 = all cores
    KernelSet kernels = KernelSet::Fast;  // --kernels (cpu/kernel_sets.h)
    std::string quant = "none";           // --quant q8_0, q4_0, ..., q6_k (quants.h)
    bool force = false;                   // --force: --quant may re-quantize a quantized file (gguf_load.h)
    DType kv_type = DType::F32;           // --kv-type
    Device device = Device::CPU;          // --device (device.h); engine_load gives the Net its backend
    std::vector<std::string> ablate;      // --ablate L.H or L.mlp (lens.h), into the Net's Ablation
};
// What a command needs loaded: fwd and bench run without a tokenizer; bench
// makes its own KV caches.
enum EngineParts { ENGINE_MODEL = 1, ENGINE_TOKENIZER = 2, ENGINE_NET = 4, ENGINE_ALL = 7 };
struct Engine {
    Model model;
    Tokenizer tok;  // empty without ENGINE_TOKENIZER
    Net net;        // empty without ENGINE_NET
};
// trained/kjv once a trained model is there, else the random-weight test
// model that `make models` writes (real Qwen tokenizer, nonsense output).
std::string default_model_path();
// `min_ctx`: a default context at least this long (fwd at a far position).
void engine_load(Engine& e, const EngineOptions& o, int parts = ENGINE_ALL, int min_ctx = 0);
// The one place that tells a GGUF file from a Hugging Face folder: a .gguf
// holds config, weights and tokenizer (gguf_load.h); a folder has
// model.cpp's and tokenizer_load.cpp's. engine_load calls both, and so do
// the commands that load a model or a tokenizer alone (info, convert,
// encode, decode).
void open_model(Model& m, const std::string& path);
void open_tokenizer(Tokenizer& tok, const std::string& path);

// Prompts go through forward() in batches of at most this many tokens, so
// the attention scores scratch ([heads, T, positions]) stays bounded.
const int PREFILL_CHUNK = 256;

struct GenerateParams {
    SamplerParams sampling;
    int n_predict = 256;                 // most tokens to generate
    std::vector<std::string> stop_strings;  // byte strings that end generation
    bool prefill_stepwise = false;       // one forward per prompt token (teacher forcing)
};

// Why generation ended.
enum class Finish {
    Stop,        // the model sampled a stop token (<|im_end|>, <|endoftext|>, eos)
    StopString,  // the text reached a --stop string
    Length,      // n_predict tokens were generated
    Context,     // the KV cache is full
    Aborted,     // on_text asked to stop (e.g. the HTTP client went away)
};
const char* finish_name(Finish f);  // "stop", "stop_string", "length", "context", "abort"

struct GenerateResult {
    std::string text;             // valid UTF-8, stop string cut off
    std::vector<int> prompt_ids;  // the tokens this call prefilled
    std::vector<int> ids;         // the generated tokens (a stop token is not included)
    Finish finish = Finish::Length;
    double prefill_ms = 0;  // the prompt through the model
    double ttft_ms = 0;     // start to first sampled token (prefill + one draw)
    double decode_ms = 0;   // first sampled token to the end
    int decode_forwards = 0;  // forward calls after the first token
};

struct GenerateHooks {
    // Called with each piece of text as it becomes final (complete UTF-8,
    // not possibly the start of a stop string). Return false to stop.
    std::function<bool(const std::string& text)> on_text;
    // Called for every sampled token (stop tokens too) with what the sampler
    // saw: its top five and probabilities (the trace report, the server).
    std::function<void(int token, const SampleInfo& info)> on_token;
};

// The ids that end a reply: <|im_end|> and <|endoftext|> looked up by their
// text in the tokenizer, plus config.json's eos_token_id(s).
std::vector<int> stop_token_ids(const Tokenizer& tok, const Config& cfg);

// Runs tokens[0..n) at positions pos.. and returns the last one's logits.
// Batched in PREFILL_CHUNK pieces, or one token at a time when stepwise.
// The returned buffer belongs to `net`; the next forward overwrites it.
float* prefill(Net& net, const int* tokens, int n, int pos, bool stepwise);

// Prefill `prompt` at position `pos` (the cache must hold positions before
// it: 0 for a fresh conversation, net.n_past to continue one), then sample
// until a stop rule fires. The sampler's window takes in the prompt and
// every generated token; its random stream continues across calls.
// Throws LanternError when the prompt itself does not fit the cache.
GenerateResult generate(Net& net, const Tokenizer& tok, Sampler& sampler, const std::vector<int>& prompt, int pos,
                        const GenerateParams& params, const GenerateHooks& hooks = {});

// One generation between forwards: the sampler, the stop rules and the
// text handed out so far. generate() keeps one; the server's scheduler
// keeps one per running request and feeds each its own logits.
struct Generation {
    const Tokenizer* tok = nullptr;
    Sampler* sampler = nullptr;
    const GenerateParams* params = nullptr;
    GenerateHooks hooks;
    std::vector<int> stops;  // stop_token_ids
    int n_sample = 0;        // ids the sampler may pick (those the tokenizer can spell)
    bool want_info = false;  // top-5 and probabilities wanted (hooks.on_token, -v)
    std::string bytes;       // everything generated, raw
    size_t printed = 0;      // how much of it went out through on_text
    GenerateResult res;
};
// Ready to sample after `prompt` (its tokens join the sampler's penalty window).
void generation_start(Generation& g, const Tokenizer& tok, const Config& cfg, Sampler& sampler,
                      const std::vector<int>& prompt, const GenerateParams& params, const GenerateHooks& hooks);
// Samples from the logits of position pos-1 (the sampler edits them), calls
// the hooks, applies the stop rules. *token gets the sampled id. Returns true
// when that token is to be fed back for another step; false when generation
// ends here (g.res.finish says why: Length when n_predict is reached).
bool generation_step(Generation& g, float* logits, int pos, int* token);
// Hands out what was held back (a possible stop string's start, a partial character).
void generation_end(Generation& g);

// Where a stop string first appears in `text` among the bytes that could
// only now complete a match (those from `from` on); npos when none. Earliest
// start wins.
size_t find_stop_string(const std::string& text, size_t from, const std::vector<std::string>& stops);
// How many trailing bytes of `text` could still grow into a stop string.
size_t stop_string_holdback(const std::string& text, const std::vector<std::string>& stops);
// How many trailing bytes of `text` are an unfinished UTF-8 character.
size_t utf8_incomplete_tail(const std::string& text);

// ---------------------------------------------------------------------------
// A conversation that keeps its KV cache between turns.
//
// Each turn renders the whole conversation with the chat template, but only
// the text past what the cache already holds is encoded and prefilled:
// "<|im_end|>\n<|im_start|>user\n...<|im_start|>assistant\n".
struct ChatSession {
    std::vector<ChatMessage> messages;
    std::string rendered;      // the conversation text the cache (plus pending) stands for
    std::vector<int> pending;  // generated tokens not yet run through the model
    ChatFormat format;         // Qwen2.5's or Qwen3's template (and thinking on/off)
};
// Forget everything but the system message (empty: the template's default).
void chat_reset(ChatSession& chat, Net& net, const std::string& system);
// Adds the user's message, prefills what is new and generates the reply,
// which is added to the conversation. When the new tokens would not fit the
// cache, nothing is run or added and the result says Finish::Context.
GenerateResult chat_turn(ChatSession& chat, Net& net, const Tokenizer& tok, Sampler& sampler,
                         const std::string& user, const GenerateParams& params, const GenerateHooks& hooks = {});
