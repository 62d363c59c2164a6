// server_api.cpp — the OpenAI API's JSON, in and out.
//
// In: the body of a generation request, field by field, to the prompt text
// (after the chat template) and the generation settings, then the prompt's
// token ids checked against the context. Every value is taken out through
// json_read.h (the depth limit and typed, range-checked access every JSON
// input gets); its JsonError becomes a 400 whose "param" is the field.
// Out: what a job made, as OpenAI's answer object, stream chunk or error.
//
// Why both halves in one file: they are one contract. The request's fields
// (the endpoint, logprobs, include_usage) decide the answer's shape, and
// ApiError is both how a request is refused and what the error answer
// says; kept apart, the halves would share it through a third header, and
// a reader would open two files to see one exchange. Here a reader who
// holds Lantern up against OpenAI's API reference reads this file alone.
// Neither half touches a socket, a clock or the model thread, so every way
// a body can be wrong, and every shape of an answer, is tested without a
// server (tests/test_server_request.cpp), and the body is fuzzed
// (tests/fuzz/). The HTTP around them is server_http.cpp's; the queue that
// runs a request, server.cpp's.
#include "serve/server_api.h"
#include <algorithm>
#include <cmath>
#include "json_read.h"
#include "tokenizer.h"

using json = nlohmann::json;  // in: what json_read.h reads

[[noreturn]] static void bad_request(const std::string& param, const std::string& code, const std::string& message) {
    throw ApiError{400, message, param, code};
}

// A message's content: a string, or the newer list of parts, of which only
// {"type": "text", "text": "..."} parts mean anything to a text model.
static std::string message_content(const json& m, size_t i) {
    std::string param = strprintf("messages[%zu].content", i);
    if (!m.contains("content") || !(m["content"].is_string() || m["content"].is_array()))
        bad_request(param, "invalid_type", "'" + param + "' must be a string or a list of text parts");
    if (m["content"].is_string()) return m["content"].get<std::string>();
    std::string text;
    for (const json& part : m["content"]) {
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
            !part["text"].is_string())
            bad_request(param, "invalid_type", "'" + param + "' parts must be {\"type\": \"text\", \"text\": \"...\"}");
        text += part["text"].get<std::string>();
    }
    return text;
}

// /v1/chat/completions: the messages through the same chat template as
// `./run "prompt"` (the model's: Qwen2.5's adds its default system message
// when none is given, Qwen3's does not). Qwen3's thinking switch is spelled
// as vLLM's and llama.cpp's servers take it:
// "chat_template_kwargs": {"enable_thinking": false}.
static std::string chat_prompt(const json& b, const RequestDefaults& d) {
    if (!json_has(b, "messages")) bad_request("messages", "missing_required_parameter", "'messages' is required");
    const json& ms = b["messages"];
    if (!ms.is_array()) bad_request("messages", "invalid_type", "'messages' must be a list of messages");
    if (ms.empty()) bad_request("messages", "empty_array", "'messages' must hold at least one message");
    std::vector<ChatMessage> msgs;
    for (size_t i = 0; i < ms.size(); i++) {
        std::string param = strprintf("messages[%zu]", i);
        if (!ms[i].is_object()) bad_request(param, "invalid_type", "'" + param + "' must be an object");
        if (!ms[i].contains("role") || !ms[i]["role"].is_string())
            bad_request(param + ".role", "invalid_type", "'" + param + ".role' must be a string");
        std::string role = ms[i]["role"].get<std::string>();
        if (role != "system" && role != "user" && role != "assistant")
            bad_request(param + ".role", "invalid_value",
                        "'" + param + ".role' is \"" + role + "\"; it must be system, user or assistant");
        msgs.push_back({role, message_content(ms[i], i)});
    }
    ChatFormat fmt = d.chat;
    if (json_has(b, "chat_template_kwargs")) {
        const json& kw = b["chat_template_kwargs"];
        if (!kw.is_object()) bad_request("chat_template_kwargs", "invalid_type", "'chat_template_kwargs' must be an object");
        if (json_has(kw, "enable_thinking"))
            fmt.think = json_as_bool(kw["enable_thinking"], "chat_template_kwargs.enable_thinking", "");
    }
    return apply_chat_template(msgs, true, fmt);
}

// /v1/completions: the prompt goes to the model as written (like --raw).
static std::string completion_prompt(const json& b) {
    if (!json_has(b, "prompt")) bad_request("prompt", "missing_required_parameter", "'prompt' is required");
    const json& p = b["prompt"];
    if (p.is_array() && p.size() == 1 && p[0].is_string()) return p[0].get<std::string>();
    if (!p.is_string()) bad_request("prompt", "invalid_type", "'prompt' must be a string");
    return p.get<std::string>();
}

// The sampling fields map one to one onto the command line's flags, so the
// same settings and seed give the same text. A field left out takes the
// server's default (RequestDefaults); `repeat_penalty` and `top_k` are not
// OpenAI's but llama.cpp's server's, as the CLI has them.
static void read_generation_fields(const json& b, GenerationRequest& r, const RequestDefaults& d, uint32_t fresh_seed) {
    r.gen.sampling = d.gen.sampling;
    SamplerParams& s = r.gen.sampling;
    s.temperature = (float)json_number(b, "temperature", s.temperature, 0, 2, "");
    s.top_p = (float)json_number(b, "top_p", s.top_p, 0, 1, "");
    if (s.top_p == 0) bad_request("top_p", "invalid_value", "\"top_p\" must be in (0, 1], not 0");
    s.top_k = (int)json_int(b, "top_k", s.top_k, 0, 1 << 30, "");
    s.frequency_penalty = (float)json_number(b, "frequency_penalty", s.frequency_penalty, -2, 2, "");
    s.presence_penalty = (float)json_number(b, "presence_penalty", s.presence_penalty, -2, 2, "");
    s.repeat_penalty = (float)json_number(b, "repeat_penalty", s.repeat_penalty, 0, 100, "");
    if (s.repeat_penalty == 0) bad_request("repeat_penalty", "invalid_value", "\"repeat_penalty\" must be greater than 0");
    s.seed = (uint32_t)json_int(b, "seed", d.fixed_seed ? s.seed : fresh_seed, 0, 4294967295LL, "");
    const char* max_name = json_has(b, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    r.gen.n_predict = (int)json_int(b, max_name, d.gen.n_predict, 1, 1 << 30, "");
    json_int(b, "n", 1, 1, 1, "");  // one answer per request
    // "stop": one string or a list of up to 4. The type is checked before
    // anything is copied: copying a list nested 100,000 deep recurses once
    // per level and overflows the stack.
    if (json_has(b, "stop")) {
        const json& st = b["stop"];
        if (!st.is_string() && !st.is_array())
            bad_request("stop", "invalid_type", "'stop' must be a non-empty string or a list of them");
        if (st.is_array() && st.size() > 4) bad_request("stop", "invalid_value", "'stop' holds at most 4 strings");
        for (size_t i = 0; i < (st.is_array() ? st.size() : 1); i++) {
            const json& x = st.is_array() ? st[i] : st;
            if (!x.is_string() || x.get_ref<const std::string&>().empty())
                bad_request("stop", "invalid_type", "'stop' must be a non-empty string or a list of them");
            r.gen.stop_strings.push_back(x.get<std::string>());
        }
    }
    // logprobs: chat says {"logprobs": true, "top_logprobs": N}; the older
    // completions endpoint says {"logprobs": N}. At most 5 alternatives: the
    // sampler keeps a top-5 (sampler.h: SampleInfo).
    if (r.chat) {
        if (json_bool(b, "logprobs", false, "")) r.top_logprobs = (int)json_int(b, "top_logprobs", 0, 0, SampleInfo::TOP, "");
        else if (json_has(b, "top_logprobs"))
            bad_request("top_logprobs", "invalid_value", "'top_logprobs' needs \"logprobs\": true");
    } else if (json_has(b, "logprobs")) r.top_logprobs = (int)json_int(b, "logprobs", 0, 0, SampleInfo::TOP, "");
    r.stream = json_bool(b, "stream", false, "");
    if (json_has(b, "stream_options")) {
        const json& so = b["stream_options"];
        if (!so.is_object()) bad_request("stream_options", "invalid_type", "'stream_options' must be {\"include_usage\": true|false}");
        r.include_usage = json_bool(so, "include_usage", false, "");
    }
}

// "model": a name this server has, as OpenAI answers a model it does not
// have: 404, code model_not_found. Leaving it out means the loaded one.
static void check_model(const json& b, const RequestDefaults& d) {
    if (!json_has(b, "model")) return;
    std::string m = json_str(b, "model", "", "");
    if (d.models.empty() || std::find(d.models.begin(), d.models.end(), m) != d.models.end()) return;
    throw ApiError{404, "the model '" + m + "' does not exist; this server has '" + d.models[0] + "' (GET /v1/models)",
                   "model", "model_not_found"};
}

// Tool calling (OpenAI's "tools" and "tool_choice", and the older
// "functions" and "function_call") asks the model to answer with a call
// that the server parses out of its text; Lantern's templates and models
// have no such format. A request that asks for it gets a 400 naming the
// field: ignored, it would be answered with plain text the client
// cannot tell from a refusal to call.
static void refuse_tools(const json& b) {
    for (const char* f : {"tools", "tool_choice", "functions", "function_call"})
        if (json_has(b, f))
            bad_request(f, "unsupported_parameter", std::string("'") + f + "' is not supported: this server does not run tool calls");
}

GenerationRequest parse_generation_request(const std::string& body, bool chat, const RequestDefaults& d,
                                           uint32_t fresh_seed) {
    json b;
    try {
        b = json_parse(body, "the body");
    } catch (const LanternError& ex) {  // not JSON, a number past a double, or nested too deep
        bad_request("", "invalid_json", ex.what());
    }
    if (!b.is_object()) bad_request("", "invalid_json", "the body must be a JSON object");
    GenerationRequest r;
    r.chat = chat;
    try {
        check_model(b, d);
        refuse_tools(b);
        r.prompt_text = chat ? chat_prompt(b, d) : completion_prompt(b);
        read_generation_fields(b, r, d, fresh_seed);
    } catch (const JsonError& ex) {  // json_read.h names the field and says what is wrong
        bad_request(ex.key, ex.code, ex.what());
    } catch (const json::exception& ex) {  // a type the checks above missed
        bad_request("", "invalid_type", ex.what());
    }
    return r;
}

std::vector<int> prompt_tokens(const GenerationRequest& r, const Tokenizer& tok, int n_ctx, const std::string& ctx_note) {
    const char* where = r.chat ? "messages" : "prompt";
    std::vector<int> ids;
    try {
        ids = tokenizer_encode(tok, r.prompt_text);
    } catch (const LanternError& ex) {
        bad_request(where, "invalid_value", ex.what());
    }
    if (ids.empty()) bad_request(where, "invalid_value", "the prompt is empty");
    if ((int)ids.size() >= n_ctx)
        bad_request(where, "context_length_exceeded",
                    strprintf("the prompt is %zu tokens; the context holds %d (%s)", ids.size(), n_ctx, ctx_note.c_str()));
    return ids;
}

// ---------------------------------------------------------------------------
// Out.

std::string api_dump(const ApiJson& j) { return j.dump(-1, ' ', false, ApiJson::error_handler_t::replace); }

ApiJson error_json(const ApiError& e) {
    ApiJson err = {{"message", e.message},
                   {"type", e.status >= 500 ? "server_error" : "invalid_request_error"},
                   {"param", e.param.empty() ? ApiJson(nullptr) : ApiJson(e.param)},
                   {"code", e.code.empty() ? ApiJson(nullptr) : ApiJson(e.code)}};
    return {{"error", err}};
}

const char* finish_reason(Finish f) {
    return f == Finish::Length || f == Finish::Context ? "length" : "stop";
}

static ApiJson usage_json(const Completion& c) {
    int p = (int)c.prompt.size(), n = (int)c.result.ids.size();
    return {{"prompt_tokens", p}, {"completion_tokens", n}, {"total_tokens", p + n}};
}

// The fields every answer and every stream chunk carry.
static ApiJson envelope(const Completion& c, const std::string& model, const char* object) {
    return {{"id", strprintf("%s-%d", c.req.chat ? "chatcmpl" : "cmpl", c.id)},
            {"object", object}, {"created", c.created}, {"model", model}};
}

// The chat form, for both endpoints: each token's text, log-probability
// and bytes, and its top alternatives.
ApiJson logprobs_json(const Completion& c, const Tokenizer& tok, size_t from, size_t to) {
    auto entry = [&](int id, float prob) {
        std::string b = token_bytes(tok, id);
        return ApiJson{{"token", utf8_sanitize(b)}, {"logprob", std::log(std::max(prob, 1e-30f))},
                       {"bytes", std::vector<unsigned char>(b.begin(), b.end())}};
    };
    ApiJson content = ApiJson::array();
    for (size_t i = from; i < to && i < c.tokens.size(); i++) {
        const SampleInfo& info = c.tokens[i];
        ApiJson t = entry(info.token, info.prob), top = ApiJson::array();
        for (int k = 0; k < std::min(c.req.top_logprobs, info.n_top); k++) top.push_back(entry(info.top[k].id, info.top[k].prob));
        t["top_logprobs"] = top;
        content.push_back(t);
    }
    return {{"content", content}};
}

ApiJson answer_json(const Completion& c, const std::string& model, const Tokenizer& tok) {
    ApiJson a = envelope(c, model, c.req.chat ? "chat.completion" : "text_completion");
    ApiJson choice = {{"index", 0}};
    if (c.req.chat) choice["message"] = {{"role", "assistant"}, {"content", c.result.text}};
    else choice["text"] = c.result.text;
    choice["logprobs"] = c.req.top_logprobs < 0 ? ApiJson(nullptr) : logprobs_json(c, tok, 0, c.result.ids.size());
    choice["finish_reason"] = finish_reason(c.result.finish);
    a["choices"] = ApiJson::array({choice});
    a["usage"] = usage_json(c);
    return a;
}

ApiJson chunk_json(const Completion& c, const std::string& model, const ApiJson& delta, const char* finish,
                   const ApiJson& logprobs) {
    ApiJson ch = envelope(c, model, c.req.chat ? "chat.completion.chunk" : "text_completion");
    ApiJson choice = {{"index", 0}};
    if (c.req.chat) choice["delta"] = delta;
    else choice["text"] = delta.value("content", "");
    choice["logprobs"] = logprobs;
    choice["finish_reason"] = finish ? ApiJson(finish) : ApiJson(nullptr);
    ch["choices"] = ApiJson::array({choice});
    return ch;
}

ApiJson usage_chunk_json(const Completion& c, const std::string& model) {
    ApiJson u = envelope(c, model, c.req.chat ? "chat.completion.chunk" : "text_completion");
    u["choices"] = ApiJson::array();
    u["usage"] = usage_json(c);
    return u;
}

ApiJson props_json(const std::string& model, const RequestDefaults& d) {
    const SamplerParams& s0 = d.gen.sampling;
    // floats as the decimal a user typed (0.7, not 0.699999988079071)
    auto dec = [](float v) { return std::round((double)v * 1e6) / 1e6; };
    struct { double temperature, top_p, repeat_penalty, frequency_penalty, presence_penalty; int top_k; uint32_t seed; } s = {
        dec(s0.temperature), dec(s0.top_p), dec(s0.repeat_penalty), dec(s0.frequency_penalty),
        dec(s0.presence_penalty), s0.top_k, s0.seed};
    ApiJson g = {{"temperature", s.temperature}, {"top_k", s.top_k},           {"top_p", s.top_p},
                 {"repeat_penalty", s.repeat_penalty}, {"frequency_penalty", s.frequency_penalty},
                 {"presence_penalty", s.presence_penalty}, {"max_tokens", d.gen.n_predict}};
    if (d.fixed_seed) g["seed"] = s.seed;
    return {{"model", model}, {"default_generation_settings", g}};
}

ApiJson models_json(const std::string& model, long created) {
    ApiJson m = {{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "lantern"}};
    return {{"object", "list"}, {"data", ApiJson::array({m})}};
}
