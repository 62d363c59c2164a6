// tests/test_generate.cpp — the generation loop on models/tiny (random
// weights, the real Qwen tokenizer; `make models` writes it): prefill both
// ways, greedy against plain argmax, seeds, stop strings, stop tokens, the
// context limit and chat's cache reuse. The text is nonsense; what is
// checked is that the loop does what it says with whatever the model emits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <unistd.h>

#include "generate.h"

struct Tiny {
    Model model;
    Tokenizer tok;
};

// Loaded once for all cases (the tokenizer takes a moment).
static Tiny& tiny() {
    static std::unique_ptr<Tiny> t;
    if (!t) {
        REQUIRE_MESSAGE(access("models/tiny/model.safetensors", F_OK) == 0, "run `make models` first");
        t.reset(new Tiny);
        load_model(t->model, "models/tiny");
        tokenizer_load(t->tok, "models/tiny");
    }
    return *t;
}

static std::vector<int> chat_prompt(const std::string& user) {
    return tokenizer_encode(tiny().tok, apply_chat_template({{"user", user}}, true));
}

static GenerateResult run_greedy(const std::vector<int>& prompt, int n, int ctx = 512,
                                 std::vector<std::string> stops = {}, std::string* streamed = nullptr) {
    Net net;
    net_init(net, tiny().model, ctx);
    Sampler s;
    sampler_init(s, SamplerParams{});
    GenerateParams p;
    p.n_predict = n;
    p.stop_strings = stops;
    GenerateHooks hooks;
    if (streamed) hooks.on_text = [streamed](const std::string& piece) { *streamed += piece; return true; };
    return generate(net, tiny().tok, s, prompt, 0, p, hooks);
}

TEST_CASE("prefill: batched (chunks of 256) and stepwise give the same logits") {
    // 300+ tokens, so the batched path takes two chunks.
    std::string text;
    for (int i = 0; i < 28; i++) text += "In the beginning God created the heaven and the earth. ";
    std::vector<int> ids = tokenizer_encode(tiny().tok, text);
    REQUIRE(ids.size() > (size_t)PREFILL_CHUNK);
    int V = tiny().model.cfg.vocab;
    Net a, b;
    net_init(a, tiny().model, 1024);
    net_init(b, tiny().model, 1024);
    std::vector<float> batched(V), stepwise(V);
    std::copy_n(prefill(a, ids.data(), (int)ids.size(), 0, false), V, batched.begin());
    std::copy_n(prefill(b, ids.data(), (int)ids.size(), 0, true), V, stepwise.begin());
    CHECK(a.n_past == (int)ids.size());
    CHECK(b.n_past == (int)ids.size());
    float max_abs = 0, max_diff = 0;
    for (int i = 0; i < V; i++) {
        max_abs = std::max(max_abs, std::fabs(batched[i]));
        max_diff = std::max(max_diff, std::fabs(batched[i] - stepwise[i]));
    }
    CHECK(max_diff <= 1e-4f * std::max(1.0f, max_abs));
    CHECK(sample_argmax(batched.data(), V) == sample_argmax(stepwise.data(), V));
}

TEST_CASE("greedy decode with the KV cache equals argmax of a full recomputation") {
    std::vector<int> prompt = chat_prompt("Hello");
    GenerateResult r = run_greedy(prompt, 8);
    REQUIRE(r.ids.size() == 8);
    CHECK(r.finish == Finish::Length);
    // No cache reuse: every step runs the whole sequence from position 0.
    std::vector<int> seq = prompt;
    for (int step = 0; step < 8; step++) {
        Net net;
        net_init(net, tiny().model, 512);
        const float* logits = forward(net, seq.data(), (int)seq.size(), 0, false);
        int best = sample_argmax(logits, tiny().model.cfg.vocab);
        CHECK(best == r.ids[step]);
        seq.push_back(best);
    }
}

TEST_CASE("same seed gives the same tokens, another seed other tokens") {
    std::vector<int> prompt = chat_prompt("Tell me a story");
    auto run = [&](uint32_t seed) {
        Net net;
        net_init(net, tiny().model, 256);
        Sampler s;
        SamplerParams sp;
        sp.temperature = 0.8f;
        sp.seed = seed;
        sampler_init(s, sp);
        GenerateParams p;
        p.n_predict = 16;
        return generate(net, tiny().tok, s, prompt, 0, p).ids;
    };
    std::vector<int> a = run(42), b = run(42), c = run(43);
    CHECK(a == b);
    CHECK(a != c);
}

TEST_CASE("stop string split across two tokens stops at its first byte") {
    std::vector<int> prompt = chat_prompt("Hello");
    GenerateResult free = run_greedy(prompt, 12);
    // Find a boundary between two tokens that both have bytes, and build a
    // stop string from the last byte of one and the first byte of the next.
    // Printable ASCII on both sides is preferred, so the check reads plainly.
    std::string stop, any;
    for (size_t i = 0; i + 1 < free.ids.size() && stop.empty(); i++) {
        std::string a = token_bytes(tiny().tok, free.ids[i]), b = token_bytes(tiny().tok, free.ids[i + 1]);
        if (a.empty() || b.empty()) continue;
        std::string pair = a.substr(a.size() - 1) + b.substr(0, 1);
        if (any.empty()) any = pair;
        if ((unsigned char)pair[0] > 32 && (unsigned char)pair[0] < 127 && (unsigned char)pair[1] > 32 &&
            (unsigned char)pair[1] < 127)
            stop = pair;
    }
    if (stop.empty()) stop = any;
    REQUIRE(!stop.empty());
    MESSAGE("stop string: " << stop);
    std::string all;
    for (int id : free.ids) all += token_bytes(tiny().tok, id);
    size_t stop_at = all.find(stop);  // an earlier occurrence would win, as it should
    std::string streamed;
    GenerateResult r = run_greedy(prompt, 12, 512, {stop}, &streamed);
    CHECK(r.finish == Finish::StopString);
    CHECK(r.text == utf8_sanitize(all.substr(0, stop_at)));
    CHECK(streamed == r.text);  // nothing of the stop string was ever printed
}

TEST_CASE("a multi-byte UTF-8 stop string") {
    std::vector<int> prompt = chat_prompt("Hello");
    GenerateResult free = run_greedy(prompt, 24);
    std::string all;
    for (int id : free.ids) all += token_bytes(tiny().tok, id);
    // The first complete multi-byte character of the output.
    size_t at = std::string::npos, len = 0;
    for (size_t i = 0; i < all.size() && at == std::string::npos; i++) {
        unsigned char c = all[i];
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
        if (need && i + need <= all.size() && utf8_sanitize(all.substr(i, need)) == all.substr(i, need)) {
            at = i;
            len = need;
        }
    }
    REQUIRE_MESSAGE(at != std::string::npos, "the greedy output of models/tiny has no multi-byte character");
    std::string stop = all.substr(at, len);
    std::string streamed;
    GenerateResult r = run_greedy(prompt, 24, 512, {stop}, &streamed);
    CHECK(r.finish == Finish::StopString);
    CHECK(r.text == utf8_sanitize(all.substr(0, at)));
    CHECK(streamed == r.text);
}

TEST_CASE("stop strings on bytes: a character split across tokens, holdback, earliest start") {
    // 中 is E4 B8 AD; two tokens might bring E4 B8 and AD.
    std::string text = "ab\xE4\xB8";
    CHECK(find_stop_string(text, 0, {"\xE4\xB8\xAD"}) == std::string::npos);
    CHECK(stop_string_holdback(text, {"\xE4\xB8\xAD"}) == 2);
    CHECK(utf8_incomplete_tail(text) == 2);
    text += "\xAD";
    CHECK(find_stop_string(text, 4, {"\xE4\xB8\xAD"}) == 2);
    CHECK(utf8_incomplete_tail(text) == 0);
    // A token can bring the stop string and more: "ab" inside "xabc".
    CHECK(find_stop_string("xabc", 0, {"ab"}) == 1);
    CHECK(find_stop_string("hello world", 6, {"world", "o w"}) == 4);  // earliest start wins
    CHECK(stop_string_holdback("hello wor", {"world"}) == 3);
    CHECK(stop_string_holdback("hello", {"world"}) == 0);
    CHECK(utf8_incomplete_tail("\xF0\x9F\x98") == 3);
    CHECK(utf8_incomplete_tail("\xF0\x9F\x98\x80") == 0);
    CHECK(utf8_incomplete_tail("a\xFF") == 0);
}

TEST_CASE("stop tokens are looked up by their text and end generation unprinted") {
    std::vector<int> stops = stop_token_ids(tiny().tok, tiny().model.cfg);
    int im_end = token_id(tiny().tok, "<|im_end|>"), eot = token_id(tiny().tok, "<|endoftext|>");
    REQUIRE(im_end >= 0);
    REQUIRE(eot >= 0);
    CHECK(std::count(stops.begin(), stops.end(), im_end) == 1);
    CHECK(std::count(stops.begin(), stops.end(), eot) == 1);

    // Make the third greedy token an eos id (as config.json could) and the
    // loop must stop before it.
    std::vector<int> prompt = chat_prompt("Hello");
    GenerateResult free = run_greedy(prompt, 6);
    REQUIRE(free.ids.size() == 6);
    std::vector<int> saved = tiny().model.cfg.eos_ids;
    tiny().model.cfg.eos_ids.push_back(free.ids[2]);
    GenerateResult r = run_greedy(prompt, 6);
    tiny().model.cfg.eos_ids = saved;
    CHECK(r.finish == Finish::Stop);
    CHECK(r.ids == std::vector<int>(free.ids.begin(), free.ids.begin() + 2));
}

TEST_CASE("the context limit ends generation with a reason, not an exception") {
    std::vector<int> prompt = chat_prompt("Hello");
    int n = (int)prompt.size();
    GenerateResult r = run_greedy(prompt, 100, n + 3);
    CHECK(r.finish == Finish::Context);
    CHECK(r.ids.size() == 4);  // positions n..n+2 are fed back, the 4th token has no room
    CHECK_THROWS_AS(run_greedy(prompt, 10, n - 1), LanternError);
    GenerateResult none = run_greedy(prompt, 0);
    CHECK(none.ids.empty());
    CHECK(none.finish == Finish::Length);
}

TEST_CASE("chat: the second turn prefills only its own tokens and sees the first") {
    const Tiny& t = tiny();
    Net net;
    net_init(net, t.model, 1024);
    Sampler s;
    sampler_init(s, SamplerParams{});
    GenerateParams p;
    p.n_predict = 6;
    ChatSession chat;
    chat_reset(chat, net, "");
    GenerateResult r1 = chat_turn(chat, net, t.tok, s, "Hello", p);
    CHECK(r1.prompt_ids == chat_prompt("Hello"));
    int cached = net.n_past;
    CHECK(cached == (int)(r1.prompt_ids.size() + r1.decode_forwards));

    GenerateResult r2 = chat_turn(chat, net, t.tok, s, "Who are you?", p);
    // What turn 2 prefilled: the reply token not yet fed back (if any), then
    // only the text that closes turn 1 and opens turn 2.
    std::vector<int> expect(r1.ids.begin() + r1.decode_forwards, r1.ids.end());
    std::vector<int> delta =
        tokenizer_encode(t.tok, "<|im_end|>\n<|im_start|>user\nWho are you?<|im_end|>\n<|im_start|>assistant\n");
    expect.insert(expect.end(), delta.begin(), delta.end());
    CHECK(r2.prompt_ids == expect);
    CHECK(chat.messages.size() == 4);

    // The reply must be what a fresh run over the whole token history gives.
    std::vector<int> history = r1.prompt_ids;
    history.insert(history.end(), r1.ids.begin(), r1.ids.begin() + r1.decode_forwards);
    history.insert(history.end(), r2.prompt_ids.begin(), r2.prompt_ids.end());
    GenerateResult fresh = run_greedy(history, 6, 1024);
    CHECK(fresh.ids == r2.ids);

    // /reset: the same first turn again gives the same reply.
    chat_reset(chat, net, "");
    sampler_init(s, SamplerParams{});
    GenerateResult again = chat_turn(chat, net, t.tok, s, "Hello", p);
    CHECK(again.ids == r1.ids);
}

TEST_CASE("chat: a full context is reported and the turn is not added") {
    const Tiny& t = tiny();
    Net net;
    int first = (int)chat_prompt("Hello").size();
    net_init(net, t.model, first + 8);
    Sampler s;
    sampler_init(s, SamplerParams{});
    GenerateParams p;
    p.n_predict = 4;
    ChatSession chat;
    chat_reset(chat, net, "");
    GenerateResult r1 = chat_turn(chat, net, t.tok, s, "Hello", p);
    CHECK(r1.ids.size() == 4);
    GenerateResult r2 = chat_turn(chat, net, t.tok, s, "And now a much longer second question", p);
    CHECK(r2.finish == Finish::Context);
    CHECK(r2.prompt_ids.empty());
    CHECK(chat.messages.size() == 2);
}
