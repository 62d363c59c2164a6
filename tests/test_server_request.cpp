// The server's API JSON without a server: parse_generation_request is a
// pure function of the body, so every way a body can be wrong is a unit
// test here, and so are the answer's and the error's shapes (the
// socket-level checks are tests/check_server.sh and
// tests/check_hostile_server.sh).
#include <doctest/doctest.h>
#include <string>
#include "serve/server_api.h"
#include "tokenizer.h"

static const char* HI = "\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]";

// A server started with no flags and no generation_config.json.
static const RequestDefaults PLAIN;

static GenerationRequest parse(const std::string& body, bool chat, const RequestDefaults& d = PLAIN) {
    return parse_generation_request(body, chat, d, 7);
}

// The error a body gets, as "param code" ("" when it parses).
static std::string error_of(const std::string& body, bool chat = true) {
    try {
        parse(body, chat);
    } catch (const ApiError& e) {
        CHECK(e.status == 400);
        CHECK(!e.message.empty());
        return e.param + " " + e.code;
    }
    return "";
}

TEST_CASE("server request: a good body becomes the prompt and the settings") {
    GenerationRequest r = parse(std::string("{") + HI +
        ", \"temperature\": 0.5, \"top_k\": 3, \"max_tokens\": 9, \"stop\": [\"x\", \"yz\"], \"stream\": true}", true);
    CHECK(r.chat);
    CHECK(r.stream);
    CHECK(r.prompt_text.find("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") != std::string::npos);
    CHECK(r.gen.sampling.temperature == 0.5f);
    CHECK(r.gen.sampling.top_k == 3);
    CHECK(r.gen.sampling.seed == 7);  // none in the body: the caller's
    CHECK(r.gen.n_predict == 9);
    CHECK(r.gen.stop_strings == std::vector<std::string>{"x", "yz"});
    GenerationRequest c = parse("{\"prompt\": \"abc\", \"seed\": 4294967295, \"stop\": \"q\"}", false);
    CHECK(c.prompt_text == "abc");
    CHECK(c.gen.sampling.seed == 4294967295u);
    CHECK(c.gen.n_predict == GenerateParams().n_predict);
    CHECK(c.gen.stop_strings == std::vector<std::string>{"q"});
}

TEST_CASE("server request: a body that is not JSON is told in Lantern's words, once") {
    try {
        parse("{\"messages\": [}", true);
        CHECK(false);
    } catch (const ApiError& e) {
        CHECK(e.message == "the body: invalid JSON at offset 14: '}', expected a value");
    }
    try {
        parse("{\"x\": 1e400}", true);
        CHECK(false);
    } catch (const ApiError& e) {
        CHECK(e.message == "the body: invalid JSON: a number too large for a double");
    }
}

TEST_CASE("server request: each bad field is named, with OpenAI's error code") {
    std::string hi = std::string("{") + HI + ", ";
    CHECK(error_of("{\"messages\": [") == " invalid_json");
    CHECK(error_of("[1, 2]") == " invalid_json");
    CHECK(error_of("{\"x\": 1e400}") == " invalid_json");  // past a double: nlohmann's out_of_range
    CHECK(error_of("{\"max_tokens\": 5}") == "messages missing_required_parameter");
    CHECK(error_of("{\"messages\": [{\"role\": \"wizard\", \"content\": \"Hi\"}]}") == "messages[0].role invalid_value");
    CHECK(error_of(hi + "\"temperature\": -0.5}") == "temperature invalid_value");
    CHECK(error_of(hi + "\"temperature\": \"hot\"}") == "temperature invalid_type");
    CHECK(error_of(hi + "\"top_p\": 0}") == "top_p invalid_value");
    CHECK(error_of(hi + "\"max_tokens\": 4294967304}") == "max_tokens invalid_value");  // not truncated to 8
    CHECK(error_of(hi + "\"max_tokens\": 7.9}") == "max_tokens invalid_type");
    CHECK(error_of(hi + "\"seed\": 18446744073709551615}") == "seed invalid_value");
    CHECK(error_of(hi + "\"n\": 2}") == "n invalid_value");
    CHECK(error_of(hi + "\"stop\": 5}") == "stop invalid_type");
    CHECK(error_of(hi + "\"stop\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}") == "stop invalid_value");
    CHECK(error_of(hi + "\"stream\": \"yes\"}") == "stream invalid_type");
    CHECK(error_of(hi + "\"stream_options\": {\"include_usage\": 1}}") == "include_usage invalid_type");
    CHECK(error_of("{\"prompt\": 5}", false) == "prompt invalid_type");
    CHECK(error_of(hi + "\"tools\": [{\"type\": \"function\"}]}") == "tools unsupported_parameter");
    CHECK(error_of(hi + "\"tool_choice\": \"auto\"}") == "tool_choice unsupported_parameter");
    CHECK(error_of("{\"prompt\": \"x\", \"functions\": []}", false) == "functions unsupported_parameter");
}

// The body that used to kill the server: "stop" nested 100,000 deep (200 KB,
// under the body limit) was deep-copied before its type was checked, and
// the copy's recursion overflowed the stack.
TEST_CASE("server request: deeply nested JSON is refused, not recursed into") {
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    CHECK(error_of(std::string("{") + HI + ", \"stop\": " + deep + "}") == " invalid_json");
    CHECK(error_of(deep) == " invalid_json");
    std::string ok_depth = std::string(10, '[') + std::string(10, ']');  // nested, but shallow: a type error
    CHECK(error_of(std::string("{") + HI + ", \"stop\": " + ok_depth + "}") == "stop invalid_type");
}

// What `./run serve -t 0.3 -k 7 -s 99` over a generation_config.json with
// repetition_penalty 1.1 and top_p 0.8 gives a request that names none of
// them; a field in the body still wins.
TEST_CASE("server request: missing fields take the server's defaults") {
    RequestDefaults d;
    d.gen.sampling.temperature = 0.3f;
    d.gen.sampling.top_k = 7;
    d.gen.sampling.top_p = 0.8f;
    d.gen.sampling.repeat_penalty = 1.1f;
    d.gen.sampling.seed = 99;
    d.gen.n_predict = 33;
    GenerationRequest r = parse(std::string("{") + HI + "}", true, d);
    CHECK(r.gen.sampling.temperature == 0.3f);
    CHECK(r.gen.sampling.top_k == 7);
    CHECK(r.gen.sampling.top_p == 0.8f);
    CHECK(r.gen.sampling.repeat_penalty == 1.1f);
    CHECK(r.gen.sampling.seed == 7);  // no --seed: the fresh one
    CHECK(r.gen.n_predict == 33);
    d.fixed_seed = true;
    r = parse(std::string("{") + HI + ", \"temperature\": 0, \"repeat_penalty\": 1, \"top_p\": 1}", true, d);
    CHECK(r.gen.sampling.temperature == 0.0f);
    CHECK(r.gen.sampling.repeat_penalty == 1.0f);
    CHECK(r.gen.sampling.top_p == 1.0f);
    CHECK(r.gen.sampling.seed == 99);  // --seed given: every request without one uses it
    CHECK(error_of(std::string("{") + HI + ", \"repeat_penalty\": 0}") == "repeat_penalty invalid_value");
}

// OpenAI answers a model it does not have with 404 model_not_found.
TEST_CASE("server request: the model field names the loaded model or gets 404") {
    RequestDefaults d;
    d.models = {"models/tiny", "tiny"};
    CHECK(parse(std::string("{\"model\": \"models/tiny\", ") + HI + "}", true, d).chat);
    CHECK(parse(std::string("{\"model\": \"tiny\", ") + HI + "}", true, d).chat);
    CHECK(parse(std::string("{") + HI + "}", true, d).chat);  // no model: the loaded one
    try {
        parse(std::string("{\"model\": \"gpt-4o\", ") + HI + "}", true, d);
        FAIL("an unknown model was accepted");
    } catch (const ApiError& e) {
        CHECK(e.status == 404);
        CHECK(e.param == "model");
        CHECK(e.code == "model_not_found");
        CHECK(e.message.find("gpt-4o") != std::string::npos);
    }
    try {
        parse(std::string("{\"model\": 5, ") + HI + "}", true, d);
        FAIL("a number was taken as a model name");
    } catch (const ApiError& e) {
        CHECK(e.status == 400);
        CHECK(e.param + " " + e.code == "model invalid_type");
    }
}

// `./run serve` on a Qwen3 folder passes the model's template in the
// defaults: no default system message, and a request may switch thinking
// off as vLLM's and llama.cpp's servers take it.
TEST_CASE("server request: the model's chat template, Qwen3's thinking switchable per request") {
    const std::string user_turn = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    const std::string no_think = "\"chat_template_kwargs\": {\"enable_thinking\": false}";
    RequestDefaults q3;
    q3.chat.style = ChatStyle::Qwen3;
    CHECK(parse(std::string("{") + HI + "}", true, q3).prompt_text == user_turn);
    CHECK(parse(std::string("{") + HI + ", " + no_think + "}", true, q3).prompt_text == user_turn + "<think>\n\n</think>\n\n");
    CHECK(parse(std::string("{") + HI + ", \"chat_template_kwargs\": {\"enable_thinking\": true}}", true, q3).prompt_text ==
          user_turn);
    // Qwen2.5 (the plain defaults): its default system message first; the switch changes nothing.
    std::string q25 = parse(std::string("{") + HI + "}", true).prompt_text;
    CHECK(q25.rfind("<|im_start|>system\n", 0) == 0);
    CHECK(q25.size() > user_turn.size());
    CHECK(q25.compare(q25.size() - user_turn.size(), user_turn.size(), user_turn) == 0);
    CHECK(parse(std::string("{") + HI + ", " + no_think + "}", true).prompt_text == q25);
    CHECK(error_of(std::string("{") + HI + ", \"chat_template_kwargs\": 3}") == "chat_template_kwargs invalid_type");
    CHECK(error_of(std::string("{") + HI + ", \"chat_template_kwargs\": {\"enable_thinking\": \"no\"}}") ==
          "chat_template_kwargs.enable_thinking invalid_type");
}

// The other half of the API: what a finished request's answer and stream
// chunks say, and the error shape, byte for byte as a client reads them.
TEST_CASE("server answer: the answer, the chunks and the error in OpenAI's shape") {
    Tokenizer tok;  // no logprobs asked: the tokenizer is not read
    Completion c;
    c.id = 3;
    c.created = 1700000000;
    c.prompt = {1, 2, 3};
    c.result.text = "Hello";
    c.result.ids = {7, 8};
    c.result.finish = Finish::Context;
    CHECK(api_dump(answer_json(c, "m", tok)) ==
          "{\"id\":\"chatcmpl-3\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":"
          "[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"logprobs\":null,"
          "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}");
    CHECK(api_dump(chunk_json(c, "m", {{"content", "He"}}, nullptr)) ==
          "{\"id\":\"chatcmpl-3\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":"
          "[{\"index\":0,\"delta\":{\"content\":\"He\"},\"logprobs\":null,\"finish_reason\":null}]}");
    c.req.chat = false;
    CHECK(api_dump(chunk_json(c, "m", ApiJson::object(), finish_reason(Finish::StopString))) ==
          "{\"id\":\"cmpl-3\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":"
          "[{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"stop\"}]}");
    CHECK(api_dump(usage_chunk_json(c, "m")) ==
          "{\"id\":\"cmpl-3\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":[],"
          "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}");
    CHECK(api_dump(error_json({400, "bad \xff", "top_p", "invalid_value"})) ==
          "{\"error\":{\"message\":\"bad \xef\xbf\xbd\",\"type\":\"invalid_request_error\",\"param\":\"top_p\","
          "\"code\":\"invalid_value\"}}");
    CHECK(api_dump(error_json({503, "busy", "", ""})) ==
          "{\"error\":{\"message\":\"busy\",\"type\":\"server_error\",\"param\":null,\"code\":null}}");
}
