// The server's request parser without a server: parse_generation_request is
// a pure function of the body, so every way a body can be wrong is a unit
// test here (the socket-level checks are tests/check_server.sh and
// tests/check_hostile_server.sh).
#include <doctest/doctest.h>
#include <string>
#include "server_request.h"

static const char* HI = "\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]";

// The error a body gets, as "param code" ("" when it parses).
static std::string error_of(const std::string& body, bool chat = true) {
    try {
        parse_generation_request(body, chat, 7);
    } catch (const ApiError& e) {
        CHECK(e.status == 400);
        CHECK(!e.message.empty());
        return e.param + " " + e.code;
    }
    return "";
}

TEST_CASE("server request: a good body becomes the prompt and the settings") {
    GenerationRequest r = parse_generation_request(std::string("{") + HI +
        ", \"temperature\": 0.5, \"top_k\": 3, \"max_tokens\": 9, \"stop\": [\"x\", \"yz\"], \"stream\": true}", true, 7);
    CHECK(r.chat);
    CHECK(r.stream);
    CHECK(r.prompt_text.find("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") != std::string::npos);
    CHECK(r.gen.sampling.temperature == 0.5f);
    CHECK(r.gen.sampling.top_k == 3);
    CHECK(r.gen.sampling.seed == 7);  // none in the body: the caller's
    CHECK(r.gen.n_predict == 9);
    CHECK(r.gen.stop_strings == std::vector<std::string>{"x", "yz"});
    GenerationRequest c = parse_generation_request("{\"prompt\": \"abc\", \"seed\": 4294967295, \"stop\": \"q\"}", false, 7);
    CHECK(c.prompt_text == "abc");
    CHECK(c.gen.sampling.seed == 4294967295u);
    CHECK(c.gen.n_predict == DEFAULT_MAX_TOKENS);
    CHECK(c.gen.stop_strings == std::vector<std::string>{"q"});
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
