// Tokenizer tests: Hugging Face parity (llama.cpp's Qwen2 vectors and our own
// goldens from tools/tokenizer_goldens.js), UTF-8 repair, streaming, errors,
// the chat template, and a tiny hand-made tokenizer.json that shares nothing
// with Qwen's sizes or ids.
#include <doctest/doctest.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utf8proc.h>
#include "common.h"
#include "tokenizer.h"
#include "test_util.h"

static const char* QWEN_TOKENIZER = "models/qwen-tokenizer/tokenizer.json";
static const char* DATA = "tests/data/tokenizer/";

// Files a test writes go to a fresh folder under $TMPDIR (removed at exit),
// so the tests run from any build folder and two runs never share files.
static std::string scratch(const std::string& name) {
    static std::string dir = [] {
        std::string t = (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + std::string("/lantern-test-XXXXXX");
        REQUIRE(mkdtemp(&t[0]) != nullptr);
        static std::string for_exit = t;
        atexit([] { std::string cmd = "rm -rf '" + for_exit + "'"; (void)!system(cmd.c_str()); });
        return t;
    }();
    return dir + "/" + name;
}


// Loaded once: every case below uses the same Qwen tokenizer.
static const Tokenizer& qwen() {
    static Tokenizer tok;
    static bool loaded = false;
    if (!loaded) {
        slurp(QWEN_TOKENIZER);  // fails the test (not skips) when missing
        tokenizer_load(tok, QWEN_TOKENIZER);
        loaded = true;
    }
    return tok;
}

static std::string bytes_of_ids(const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += token_bytes(qwen(), id);
    return s;
}

// The byte-level token for one raw byte (for building invalid UTF-8).
static int byte_token(unsigned char b) { return qwen().byte_to_id[b]; }

TEST_CASE("tokenizer: loads Qwen's tokenizer.json, from the file or its folder") {
    const Tokenizer& tok = qwen();
    CHECK(tokenizer_vocab_size(tok) == 151669);  // 151,643 BPE tokens + 26 added
    CHECK(tok.num_merges == 151387);
    CHECK(tok.added.size() == 26);
    CHECK(tok.nfc);
    CHECK(token_id(tok, "<|endoftext|>") == 151643);
    CHECK(token_id(tok, "<|im_start|>") == 151644);
    CHECK(token_id(tok, "<|im_end|>") == 151645);
    CHECK(token_id(tok, "Ġworld") == 1879);
    CHECK(token_id(tok, "no such piece") == -1);
    CHECK(token_bytes(tok, 1879) == " world");
    CHECK(token_bytes(tok, 151645) == "<|im_end|>");
    CHECK(tok.eos_token == "<|im_end|>");  // from tokenizer_config.json
    Tokenizer from_folder;
    tokenizer_load(from_folder, "models/qwen-tokenizer");
    CHECK(from_folder.vocab_size == tok.vocab_size);
    CHECK(tokenizer_encode(from_folder, "Hello world") == std::vector<int>{9707, 1879});
}

TEST_CASE("tokenizer: small examples, checkable by hand") {
    const Tokenizer& tok = qwen();
    CHECK(tokenizer_encode(tok, "Hello world") == std::vector<int>{9707, 1879});
    CHECK(tokenizer_encode(tok, "12345") == std::vector<int>{16, 17, 18, 19, 20});  // one token per digit
    CHECK(tokenizer_encode(tok, "") == std::vector<int>{});
    CHECK(tokenizer_encode(tok, "<|im_start|>") == std::vector<int>{151644});
    CHECK(tokenizer_encode(tok, "I'm") == std::vector<int>{40, 2776});
    // NFC: the decomposed and the composed "é" are the same text.
    CHECK(tokenizer_encode(tok, "cafe\xCC\x81") == tokenizer_encode(tok, "caf\xC3\xA9"));
}

TEST_CASE("tokenizer: llama.cpp's Qwen2 test vectors") {
    std::string inp = slurp(std::string(DATA) + "ggml-vocab-qwen2.gguf.inp");
    std::string out = slurp(std::string(DATA) + "ggml-vocab-qwen2.gguf.out");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t p = 0, q; (q = inp.find(sep, p)) != std::string::npos; p = q + sep.size()) texts.push_back(inp.substr(p, q - p));
    std::vector<std::vector<int>> expected;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream ids(line);
        std::vector<int> v;
        for (int id; ids >> id;) v.push_back(id);
        expected.push_back(v);
    }
    REQUIRE(texts.size() == 46);
    REQUIRE(expected.size() == texts.size());
    for (size_t i = 0; i < texts.size(); i++) {
        INFO("case " << i << ": " << nlohmann::json(texts[i]).dump());
        CHECK(tokenizer_encode(qwen(), texts[i]) == expected[i]);
    }
}

// NFC of the whole text, straight from utf8proc (the encoder's own NFC only
// touches stretches that can change; this is the independent check).
static std::string nfc_whole(const std::string& s) {
    utf8proc_uint8_t* out = nullptr;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t*)s.data(), (utf8proc_ssize_t)s.size(), &out,
                                      (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    REQUIRE(n >= 0);
    std::string r((const char*)out, (size_t)n);
    free(out);
    return r;
}

TEST_CASE("tokenizer: identical to Hugging Face on the golden corpus") {
    nlohmann::json goldens = nlohmann::json::parse(slurp(std::string(DATA) + "goldens.json"));
    REQUIRE(goldens.size() >= 300);
    int mismatches = 0;
    for (const auto& c : goldens) {
        std::string text = c["text"];
        std::vector<int> ids = tokenizer_encode(qwen(), text);
        bool same = ids == c["ids"].get<std::vector<int>>();
        // decode(encode(x)) is HF's decode of the same ids, and is NFC(x).
        std::string decoded = tokenizer_decode(qwen(), ids);
        bool round_trip = decoded == c["decoded"].get<std::string>() && decoded == nfc_whole(text);
        if (!same || !round_trip) {
            mismatches++;
            INFO("group " << c["group"].get<std::string>() << ": " << c["text"].dump().substr(0, 200));
            CHECK(same);
            CHECK(round_trip);
        }
    }
    CHECK(mismatches == 0);
}

TEST_CASE("tokenizer: decode repairs invalid UTF-8 like Hugging Face") {
    auto decode_bytes = [](std::initializer_list<unsigned char> bytes) {
        std::vector<int> ids;
        for (unsigned char b : bytes) ids.push_back(byte_token(b));
        return tokenizer_decode(qwen(), ids);
    };
    const std::string R = "\xEF\xBF\xBD";  // U+FFFD
    CHECK(decode_bytes({'a', 0x80, 'b'}) == "a" + R + "b");        // stray continuation
    CHECK(decode_bytes({0xE4, 0xBD, 'a'}) == R + "a");              // 3-byte char cut short: one U+FFFD
    CHECK(decode_bytes({0xF0, 0x9F, 0x91}) == R);                   // 4-byte char cut short at the end
    CHECK(decode_bytes({0xED, 0xA0, 0x80}) == R + R + R);           // a surrogate: each byte on its own
    CHECK(decode_bytes({0xC0, 0xAF}) == R + R);                     // overlong
    CHECK(decode_bytes({0xF4, 0x90, 0x80, 0x80}) == R + R + R + R); // above U+10FFFF
    CHECK(decode_bytes({0xE4, 0xBD, 0xA0}) == "\xE4\xBD\xA0");      // 你, whole
    CHECK(utf8_sanitize("\xF0\x9F\x91\x8D") == "\xF0\x9F\x91\x8D");
}

TEST_CASE("tokenizer: the stream decoder only emits whole characters") {
    const Tokenizer& tok = qwen();
    std::string text = "Hi \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD caf\xC3\xA9!";
    std::vector<int> ids = tokenizer_encode(tok, text);
    StreamDecoder sd;
    std::string streamed;
    for (int id : ids) {
        std::string piece = sd.push(tok, id);
        CHECK(utf8_sanitize(piece) == piece);  // every piece is valid on its own
        streamed += piece;
    }
    streamed += sd.flush();
    CHECK(streamed == text);
    // 你 as three single-byte tokens: nothing until the third.
    StreamDecoder sd2;
    CHECK(sd2.push(tok, byte_token(0xE4)) == "");
    CHECK(sd2.push(tok, byte_token(0xBD)) == "");
    CHECK(sd2.push(tok, byte_token(0xA0)) == "\xE4\xBD\xA0");
    // An impossible byte is replaced at once; an unfinished tail at flush().
    CHECK(sd2.push(tok, byte_token(0xFF)) == "\xEF\xBF\xBD");
    CHECK(sd2.push(tok, byte_token(0xE4)) == "");
    CHECK(sd2.flush() == "\xEF\xBF\xBD");
    CHECK(bytes_of_ids(ids) == text);
}

TEST_CASE("tokenizer: bad input gives a clear error, not a crash") {
    const Tokenizer& tok = qwen();
    CHECK_THROWS_AS(tokenizer_encode(tok, "ok \xFF"), LanternError);
    CHECK_THROWS_AS(tokenizer_encode(tok, "\xE4\xBD"), LanternError);          // truncated
    CHECK_THROWS_AS(tokenizer_encode(tok, "\xED\xA0\x80"), LanternError);      // surrogate
    CHECK_THROWS_AS(tokenizer_decode(tok, {9707, 151669}), LanternError);     // one past the end
    CHECK_THROWS_AS(tokenizer_decode(tok, {-1}), LanternError);
    CHECK_THROWS_AS(token_bytes(tok, 1 << 30), LanternError);
    Tokenizer t;
    CHECK_THROWS_AS(tokenizer_load(t, "no/such/folder"), LanternError);
    CHECK_THROWS_AS(tokenizer_load(t, std::string(DATA) + "ggml-vocab-qwen2.gguf.inp"), LanternError);  // not JSON
    try {
        tokenizer_encode(tok, "abc\xC3");
    } catch (const LanternError& e) {
        CHECK(std::string(e.what()).find("offset 3") != std::string::npos);
    }
}

TEST_CASE("tokenizer: long inputs") {
    const Tokenizer& tok = qwen();
    std::string spaces(100000, ' ');
    std::vector<int> ids = tokenizer_encode(tok, spaces + "x");
    CHECK(tokenizer_decode(tok, ids) == spaces + "x");
    std::string word(5000, 'q');
    CHECK(tokenizer_decode(tok, tokenizer_encode(tok, word)) == word);
}

TEST_CASE("tokenizer: chat template (Qwen2.5 ChatML)") {
    std::string p = apply_chat_template({{"user", "Hi!"}}, true);
    CHECK(p == "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
               "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
    std::string q = apply_chat_template({{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}}, false);
    CHECK(q == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
               "<|im_start|>assistant\nHello.<|im_end|>\n");
    std::vector<int> ids = tokenizer_encode(qwen(), p);
    CHECK(ids.front() == 151644);
    CHECK(ids[1] == 8948);  // "system"
    CHECK(std::count(ids.begin(), ids.end(), 151645) == 2);
    CHECK(tokenizer_decode(qwen(), ids) == p);
}

// A tokenizer.json made here, with 256 byte tokens, a few merges, and added
// tokens at ids Qwen does not use: the loader must take everything from the
// file. Both spellings of merges ("a b" and ["a","b"]) must load the same.
static std::string tiny_tokenizer_json(bool merges_as_pairs) {
    nlohmann::json vocab = nlohmann::json::object();
    std::vector<std::string> byte_piece(256);
    for (int b = 0, next = 256; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        int cp = printable ? b : next++;
        std::string s;
        if (cp < 0x80) s += (char)cp;
        else { s += (char)(0xC0 | (cp >> 6)); s += (char)(0x80 | (cp & 0x3F)); }
        byte_piece[b] = s;
        vocab[s] = b;
    }
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"l", "o"}, {"lo", "w"}, {"e", "r"}, {"Ġ", "low"}, {"Ġlow", "er"}};
    nlohmann::json m = nlohmann::json::array();
    int id = 256;
    for (auto& [a, b] : merges) {
        vocab[a + b] = id++;
        if (merges_as_pairs) m.push_back({a, b});
        else m.push_back(a + " " + b);
    }
    nlohmann::json j = {
        {"version", "1.0"},
        {"added_tokens",
         {{{"id", 300}, {"content", "<|im_start|>"}, {"special", true}},
          {{"id", 301}, {"content", "<|im_end|>"}, {"special", true}}}},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", " ?\\p{L}+| ?\\p{N}|\\s+(?!\\S)|\\s+|[^\\s\\p{L}\\p{N}]+"}}}, {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", m}}}};
    return j.dump(1);
}

TEST_CASE("tokenizer: a tiny tokenizer.json with its own sizes and ids") {
    for (bool pairs : {true, false}) {
        std::string path = scratch(std::string("tiny_tokenizer_") + (pairs ? "pairs" : "strings") + ".json");
        { std::ofstream(path) << tiny_tokenizer_json(pairs); }
        Tokenizer tok;
        tokenizer_load(tok, path);
        CHECK(tokenizer_vocab_size(tok) == 302);
        CHECK(tok.num_merges == 5);
        CHECK(token_id(tok, "<|im_end|>") == 301);
        // " lower": bytes Ġ l o w e r -> lo -> low -> Ġlow, er -> Ġlower
        std::vector<int> ids = tokenizer_encode(tok, "<|im_start|>low lower<|im_end|>");
        CHECK(ids == std::vector<int>{300, 257, 260, 301});
        CHECK(tokenizer_decode(tok, ids) == "<|im_start|>low lower<|im_end|>");
        CHECK_THROWS_AS(tokenizer_decode(tok, {302}), LanternError);
    }
}

// Damaged files: every one must be refused with a LanternError (a message,
// not a crash or a foreign exception).
TEST_CASE("tokenizer: damaged tokenizer.json files are refused cleanly") {
    const std::string good = tiny_tokenizer_json(true);
    std::vector<std::string> bad;
    for (size_t cut : {size_t(0), size_t(1), size_t(10), good.size() / 3, good.find("\"merges\"") + 12, good.size() - 2})
        bad.push_back(good.substr(0, cut));  // truncated
    auto replaced = [&](const std::string& from, const std::string& to) {
        std::string s = good;
        size_t at = s.find(from);
        REQUIRE(at != std::string::npos);
        return s.replace(at, from.size(), to);
    };
    bad.push_back(replaced("\"id\": 300", "\"id\": \"300\""));            // id of the wrong type
    bad.push_back(replaced("\"id\": 300", "\"id\": 99999999999"));        // implausible id
    bad.push_back(replaced("\"type\": \"NFC\"", "\"type\": \"NFKC\""));   // unsupported normalizer
    bad.push_back(replaced("\"type\": \"BPE\"", "\"type\": \"WordPiece\""));
    bad.push_back(replaced("\"pretokenizers\"", "\"pretokenizerz\""));     // no ByteLevel step left
    bad.push_back(replaced("\"Isolated\"", "\"Removed\""));
    nlohmann::json unknown_piece = nlohmann::json::parse(good);
    unknown_piece["model"]["merges"][1] = {"lo", "zz"};  // a merge of a piece not in the vocab
    bad.push_back(unknown_piece.dump());
    bad.push_back(replaced("(?!\\\\S)", "(?!\\\\S"));                     // a regex that does not compile
    std::string path = scratch("damaged_tokenizer.json");
    for (size_t i = 0; i < bad.size(); i++) {
        { std::ofstream(path) << bad[i]; }
        Tokenizer tok;
        INFO("damaged file " << i);
        CHECK_THROWS_AS(tokenizer_load(tok, path), LanternError);
    }
}

// Hostile files: each must be refused with a LanternError whose message
// names the problem -- not a stack overflow, a silently wrong value, or
// undefined behaviour in a float-to-int conversion.
TEST_CASE("tokenizer: hostile tokenizer.json files are refused with the key named") {
    const std::string good = tiny_tokenizer_json(true);
    auto replaced = [&](const std::string& from, const std::string& to) {
        std::string s = good;
        size_t at = s.find(from);
        REQUIRE(at != std::string::npos);
        return s.replace(at, from.size(), to);
    };
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    struct Case { std::string text, want; };
    std::vector<Case> cases = {
        {"{\"x\": " + deep + ", " + good.substr(1), "nested deeper than 64 levels"},                 // skip_value
        {replaced("\"decoder\": {", "\"decoder\": {\"x\": " + deep + ", "), "nested deeper than 64 levels"},  // the small sections
        {replaced("\"lo\":", "\"lo\\u000G\":"), "bad \\u escape"},                             // not a hex digit
        {replaced("\"id\": 300", "\"id\": 4e92"), "\"added_tokens[0].id\" must be an integer"},
        {replaced("\"id\": 300", "\"id\": 7.9"), "\"added_tokens[0].id\" must be an integer"},
        {replaced("\"id\": 300", "\"id\": -3"), "\"added_tokens[0].id\" must be an integer in [0, 16777215], not -3"},
        {replaced("\"special\": true", "\"special\": \"yes\""), "\"special\" must be true or false"},
    };
    std::string path = scratch("hostile_tokenizer.json");
    for (size_t i = 0; i < cases.size(); i++) {
        { std::ofstream(path) << cases[i].text; }
        Tokenizer tok;
        INFO("hostile file " << i);
        std::string msg;
        try {
            tokenizer_load(tok, path);
        } catch (const LanternError& e) {
            msg = e.what();
        }
        CHECK(msg.find(path) == 0);
        CHECK_MESSAGE(msg.find(cases[i].want) != std::string::npos, msg);
    }
}
