// tokenizer.cpp — byte-level BPE, the way Hugging Face's `tokenizers` runs a
// tokenizer.json like Qwen2.5's. Encoding is a pipeline of five steps:
//
//   text --split out added tokens--> pieces of plain text
//        --NFC--> normalized text --split regex--> pre-tokens ("Hello", " world", "!")
//        --bytes, then merges by rank--> token ids
//
// and decoding is the short way back: ids -> bytes -> text (UTF-8 repaired).
// The chapter book/07-tokenizer.md walks through every step with examples.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer.h"
#include <pcre2.h>
#include <utf8proc.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>
#include "common.h"
#include "logging.h"

using json = nlohmann::json;

// ---------------------------------------------------------------------------
// UTF-8. The text we are given and the bytes tokens decode to both need
// checking: the encoder refuses invalid input; the decoder repairs it, since a
// model may well generate a token sequence that cuts a character in half.
//
// utf8_scan looks at the sequence starting at s (n > 0 bytes available). A
// valid character gives its length. Otherwise it gives the length of the
// "maximal ill-formed subsequence" (the longest start that could still have
// become a valid character; at least 1 byte), which Unicode recommends --
// and Rust's String::from_utf8_lossy, hence Hugging Face, uses -- as the
// unit that one U+FFFD replaces. `truncated` says the bytes ran out while the
// character was still possible: a streaming decoder should wait for more.
struct Utf8Scan {
    int len;
    bool valid;
    bool truncated;
};

static Utf8Scan utf8_scan(const unsigned char* s, size_t n) {
    unsigned char b = s[0];
    if (b < 0x80) return {1, true, false};
    int need;                   // continuation bytes that must follow
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the first continuation
    if (b >= 0xC2 && b <= 0xDF) need = 1;
    else if (b == 0xE0) need = 2, lo = 0xA0;          // no overlong 3-byte forms
    else if (b == 0xED) need = 2, hi = 0x9F;          // no surrogates D800-DFFF
    else if (b >= 0xE1 && b <= 0xEF) need = 2;
    else if (b == 0xF0) need = 3, lo = 0x90;          // no overlong 4-byte forms
    else if (b == 0xF4) need = 3, hi = 0x8F;          // nothing above U+10FFFF
    else if (b >= 0xF1 && b <= 0xF3) need = 3;
    else return {1, false, false};                    // 80-BF alone, C0, C1, F5-FF
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= n) return {k, false, true};
        unsigned char c = s[k];
        bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
        if (!ok) return {k, false, false};
    }
    return {need + 1, true, false};
}

static const char REPLACEMENT_CHAR[] = "\xEF\xBF\xBD";  // U+FFFD

std::string utf8_sanitize(const std::string& bytes) {
    std::string out;
    out.reserve(bytes.size());
    const unsigned char* s = (const unsigned char*)bytes.data();
    size_t n = bytes.size(), i = 0;
    while (i < n) {
        Utf8Scan u = utf8_scan(s + i, n - i);
        if (u.valid) out.append(bytes, i, u.len);
        else out += REPLACEMENT_CHAR;
        i += u.len;
    }
    return out;
}

static void utf8_append(std::string& out, uint32_t cp) {
    char buf[4];
    int n = (int)utf8proc_encode_char((utf8proc_int32_t)cp, (utf8proc_uint8_t*)buf);
    out.append(buf, n);
}

// ---------------------------------------------------------------------------
// The byte-level alphabet. BPE works on bytes, but the vocab is stored as
// JSON strings, and a string holding raw byte 0x0A or a lone 0xE4 would be
// unreadable or invalid. GPT-2's trick: give each of the 256 bytes its own
// printable character. Bytes that are already printable and not a space
// ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68 are
// given the characters U+0100, U+0101, ... in byte order. So a space (0x20)
// is 'Ġ' (U+0120), a newline (0x0A) is 'Ċ' (U+010A).
// (The tables are built on first use; C++ makes that safe across threads.)
static uint32_t byte_to_char(int b) {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        uint32_t next = 0x100;
        for (int x = 0; x < 256; x++) {
            bool printable = (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
            t[x] = printable ? (uint32_t)x : next++;
        }
        return t;
    }();
    return table[b];
}

// The inverse, as Hugging Face's ByteLevel decoder applies it: a token string
// whose characters all belong to the alphabet becomes those bytes; a string
// with any other character (an added token like "<think>" is fine, all ASCII
// printable; one with a real space is not) is kept as its own UTF-8 bytes.
static std::string piece_to_bytes(const std::string& piece) {
    static const std::array<int, 0x144> char_to_byte = [] {  // the alphabet ends at U+0143
        std::array<int, 0x144> t;
        t.fill(-1);
        for (int b = 0; b < 256; b++) t[byte_to_char(b)] = b;
        return t;
    }();
    std::string out;
    const unsigned char* s = (const unsigned char*)piece.data();
    for (size_t i = 0; i < piece.size();) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t len = utf8proc_iterate(s + i, piece.size() - i, &cp);
        if (len <= 0 || cp >= 0x144 || char_to_byte[cp] < 0) return piece;
        out += (char)char_to_byte[cp];
        i += len;
    }
    return out;
}

// ---------------------------------------------------------------------------
// The merge table: (left id, right id) -> Merge, open addressing with linear
// probing, sized to a power of two at most two thirds full. std::unordered_map
// would do, but this lookup is the inner loop of encoding.
static uint64_t pair_key(int left, int right) { return ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1; }

static size_t pair_slot(uint64_t key, uint64_t mask) { return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask; }

static void merges_init(MergeTable& t, size_t count) {
    size_t cap = 16;
    while (cap < count + count / 2) cap *= 2;
    t.keys.assign(cap, 0);
    t.values.assign(cap, Merge{0, 0});
    t.mask = cap - 1;
}

// A pair listed twice keeps its later rank, as in Hugging Face.
static void merges_put(MergeTable& t, int left, int right, Merge m) {
    uint64_t key = pair_key(left, right);
    size_t i = pair_slot(key, t.mask);
    while (t.keys[i] != 0 && t.keys[i] != key) i = (i + 1) & t.mask;
    t.keys[i] = key;
    t.values[i] = m;
}

// Not static: the exercise chapters/bpe calls it from a student's bpe_word.
const Merge* merges_get(const MergeTable& t, int left, int right) {
    uint64_t key = pair_key(left, right);
    for (size_t i = pair_slot(key, t.mask);; i = (i + 1) & t.mask) {
        if (t.keys[i] == key) return &t.values[i];
        if (t.keys[i] == 0) return nullptr;
    }
}


// The piece index, the same idea for strings: a slot holds an id (and the
// piece's hash, so that a wrong slot rarely costs a string compare), and the
// string to compare with is that id's piece.
static uint32_t piece_hash(std::string_view piece) { return (uint32_t)std::hash<std::string_view>()(piece); }

static void pieces_init(PieceIndex& t, size_t count) {
    size_t cap = 16;
    while (cap < count + count / 2) cap *= 2;
    t.slots.assign(cap, 0);
    t.mask = cap - 1;
}

// The slot that holds `piece`, or the empty slot where it would go.
static size_t pieces_find(const Tokenizer& tok, std::string_view piece, uint32_t h) {
    const PieceIndex& t = tok.piece_to_id;
    size_t i = (h * 0x9E3779B97F4A7C15ull >> 32) & t.mask;
    for (;; i = (i + 1) & t.mask) {
        uint64_t slot = t.slots[i];
        if (slot == 0 || ((slot >> 32) == h && tok.id_to_piece[(uint32_t)slot - 1] == piece)) return i;
    }
}

static int pieces_get(const Tokenizer& tok, std::string_view piece) {
    uint64_t slot = tok.piece_to_id.slots[pieces_find(tok, piece, piece_hash(piece))];
    return (int)(uint32_t)slot - 1;
}

// ---------------------------------------------------------------------------
// Reading tokenizer.json. The file is 11 MB and nearly all of it is two
// sections: model.vocab (151,643 "piece": id entries) and model.merges
// (151,387 pairs of pieces). nlohmann's parser needs ~230 ms to build a DOM
// of the whole file here, and ~60 ms just to stream through it as SAX events
// -- too slow for something every run does first. Those two sections only
// hold strings, integers and pairs, so a small hand-written reader walks the
// top of the file, parses them itself (~20 ms), and hands everything else
// -- a few KB: added_tokens, normalizer, pre_tokenizer -- to nlohmann as text
// with the two big sections cut out.
struct JsonScan {
    const char *begin, *p, *end;
    const std::string& path;
};

[[noreturn]] static void scan_fail(const JsonScan& s, const char* what) {
    fail("%s: %s at byte %zu", s.path.c_str(), what, (size_t)(s.p - s.begin));
}
static void skip_space(JsonScan& s) {
    while (s.p < s.end && (*s.p == ' ' || *s.p == '\n' || *s.p == '\r' || *s.p == '\t')) s.p++;
}
static char peek(JsonScan& s) {
    skip_space(s);
    return s.p < s.end ? *s.p : '\0';
}
static void expect(JsonScan& s, char c) {
    if (peek(s) != c) scan_fail(s, (std::string("expected '") + c + "'").c_str());
    s.p++;
}
static unsigned scan_hex4(JsonScan& s) {
    if (s.end - s.p < 4) scan_fail(s, "short \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; k++, s.p++) {
        char c = *s.p;
        v = v * 16 + (c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99);
        if (v >= 0x10000) scan_fail(s, "bad \\u escape");
    }
    return v;
}
// A JSON string, escapes decoded. Most pieces have none: one plain copy.
static void scan_string(JsonScan& s, std::string& out) {
    expect(s, '"');
    out.clear();
    for (;;) {
        const char* run = s.p;
        while (s.p < s.end && *s.p != '"' && *s.p != '\\' && (unsigned char)*s.p >= 0x20) s.p++;
        out.append(run, s.p - run);
        if (s.p >= s.end || (unsigned char)*s.p < 0x20) scan_fail(s, "unterminated string");
        if (*s.p++ == '"') return;
        if (s.p >= s.end) scan_fail(s, "unterminated string");
        char e = *s.p++;
        switch (e) {
            case '"': case '\\': case '/': out += e; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                unsigned cp = scan_hex4(s);
                if (cp >= 0xD800 && cp <= 0xDBFF) {  // a surrogate pair spells one character
                    if (s.end - s.p < 2 || s.p[0] != '\\' || s.p[1] != 'u') scan_fail(s, "lone surrogate");
                    s.p += 2;
                    unsigned lo = scan_hex4(s);
                    if (lo < 0xDC00 || lo > 0xDFFF) scan_fail(s, "lone surrogate");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) scan_fail(s, "lone surrogate");
                utf8_append(out, cp);
                break;
            }
            default: scan_fail(s, "bad escape");
        }
    }
}
static int scan_id(JsonScan& s) {
    skip_space(s);
    long v = 0;
    const char* start = s.p;
    while (s.p < s.end && *s.p >= '0' && *s.p <= '9' && v <= 0x7fffffff) v = v * 10 + (*s.p++ - '0');
    if (s.p == start || v > 0x7fffffff) scan_fail(s, "expected a token id (a non-negative integer)");
    return (int)v;
}
// After an element: true if another follows (','), false at the closing bracket.
static bool more(JsonScan& s, char close) {
    char c = peek(s);
    if (c == ',') { s.p++; return true; }
    if (c == close) { s.p++; return false; }
    scan_fail(s, "expected ',' or closing bracket");
}
static void skip_value(JsonScan& s) {
    std::string ignored;
    char c = peek(s);
    if (c == '"') scan_string(s, ignored);
    else if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        s.p++;
        if (peek(s) == close) { s.p++; return; }
        do {
            if (close == '}') { scan_string(s, ignored); expect(s, ':'); }
            skip_value(s);
        } while (more(s, close));
    } else {
        const char* start = s.p;
        while (s.p < s.end && (isalnum((unsigned char)*s.p) || *s.p == '-' || *s.p == '+' || *s.p == '.')) s.p++;
        if (s.p == start) scan_fail(s, "expected a value");
    }
}

// "vocab": {"piece": id, ...}
static void scan_vocab(JsonScan& s, std::vector<std::pair<std::string, int>>& vocab) {
    expect(s, '{');
    if (peek(s) == '}') { s.p++; return; }
    std::string piece;
    do {
        scan_string(s, piece);
        expect(s, ':');
        vocab.emplace_back(piece, scan_id(s));
    } while (more(s, '}'));
}

// "merges": [["left", "right"], ...], or the older form ["left right", ...].
static void scan_merges(JsonScan& s, std::vector<std::string>& parts) {
    expect(s, '[');
    if (peek(s) == ']') { s.p++; return; }
    std::string a, b;
    do {
        if (peek(s) == '[') {
            s.p++;
            scan_string(s, a);
            expect(s, ',');
            scan_string(s, b);
            expect(s, ']');
        } else {
            scan_string(s, a);
            size_t sp = a.find(' ');
            if (sp == std::string::npos || a.find(' ', sp + 1) != std::string::npos)
                scan_fail(s, "a merge is not two pieces separated by one space");
            b = a.substr(sp + 1);
            a.resize(sp);
        }
        parts.push_back(a);
        parts.push_back(b);
    } while (more(s, ']'));
}

// Walks the top object and model; returns the file's text without the two
// big sections (they become {} and []), for nlohmann to parse.
static std::string scan_tokenizer_json(const std::string& text, const std::string& path,
                                       std::vector<std::pair<std::string, int>>& vocab, std::vector<std::string>& merge_parts) {
    JsonScan s{text.data(), text.data(), text.data() + text.size(), path};
    std::string key, rest;
    size_t copied = 0;
    auto cut = [&](size_t from, const char* replacement) {  // drop text[from, s.p) from the rest
        rest.append(text, copied, from - copied).append(replacement);
        copied = s.p - s.begin;
    };
    expect(s, '{');
    if (peek(s) == '}') scan_fail(s, "empty object");
    do {
        scan_string(s, key);
        expect(s, ':');
        if (key != "model" || peek(s) != '{') { skip_value(s); continue; }
        s.p++;
        if (peek(s) == '}') { s.p++; continue; }
        do {
            scan_string(s, key);
            expect(s, ':');
            size_t from = (size_t)(s.p - s.begin);
            if (key == "vocab") { scan_vocab(s, vocab); cut(from, "{}"); }
            else if (key == "merges") { scan_merges(s, merge_parts); cut(from, "[]"); }
            else skip_value(s);
        } while (more(s, '}'));
    } while (more(s, '}'));
    rest.append(text, copied, std::string::npos);
    return rest;
}

static bool read_file(const std::string& path, std::string& out) {
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    out.resize(size > 0 ? (size_t)size : 0);
    size_t got = out.empty() ? 0 : fread(&out[0], 1, out.size(), f);
    fclose(f);
    return got == out.size();
}

static std::string json_str(const json& j, const char* name) {
    return j.contains(name) && j[name].is_string() ? j[name].get<std::string>() : std::string();
}
static bool json_flag(const json& j, const char* name, bool fallback) {
    return j.contains(name) && j[name].is_boolean() ? j[name].get<bool>() : fallback;
}

// GPT-2's split regex: what a ByteLevel pre-tokenizer with use_regex=true
// applies when the file gives no Split step of its own.
static const char GPT2_SPLIT_REGEX[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// Reads the pre_tokenizer section. Supported: the pieces a byte-level BPE is
// built from -- Split (a regex, "Isolated": every match and every gap between
// matches is a pre-token), ByteLevel, or a Sequence of them. Anything else is
// refused rather than silently encoded differently from Hugging Face.
static void read_pre_tokenizer(Tokenizer& tok, const json& p, bool& byte_level) {
    std::string type = json_str(p, "type");
    if (type == "Sequence") {
        for (const json& step : p.value("pretokenizers", json::array())) read_pre_tokenizer(tok, step, byte_level);
    } else if (type == "ByteLevel") {
        byte_level = true;
        if (json_flag(p, "add_prefix_space", false)) fail("%s: ByteLevel add_prefix_space=true is not supported", tok.path.c_str());
        if (json_flag(p, "use_regex", true)) {
            if (!tok.split_regex_source.empty()) fail("%s: two split regexes", tok.path.c_str());
            tok.split_regex_source = GPT2_SPLIT_REGEX;
        }
    } else if (type == "Split") {
        std::string regex = p.contains("pattern") ? json_str(p["pattern"], "Regex") : "";
        if (regex.empty()) fail("%s: Split needs a \"Regex\" pattern", tok.path.c_str());
        if (json_str(p, "behavior") != "Isolated" || json_flag(p, "invert", false))
            fail("%s: only Split behavior Isolated without invert is supported", tok.path.c_str());
        if (!tok.split_regex_source.empty()) fail("%s: two split regexes", tok.path.c_str());
        tok.split_regex_source = regex;
    } else {
        fail("%s: pre-tokenizer \"%s\" is not supported", tok.path.c_str(), type.c_str());
    }
}

// The split regex is written for Oniguruma, the engine Hugging Face uses.
// Qwen's uses \p{L}, \p{N}, \s, (?i:...) and (?!...), which PCRE2 (with UTF
// and UCP, i.e. Unicode properties for \s) reads the same way -- except for
// one character: PCRE2's \s still counts U+180E MONGOLIAN VOWEL SEPARATOR as
// a space, which Unicode stopped doing in version 6.3; Oniguruma follows
// Unicode's White_Space list. So \s and \S are spelled out as that list.
static const char WHITE_SPACE[] = "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

static std::string oniguruma_to_pcre2(const std::string& re, const std::string& path) {
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < re.size(); i++) {
        char c = re[i];
        if (c == '\\' && i + 1 < re.size()) {
            char e = re[++i];
            if (e == 's') out += in_class ? std::string(WHITE_SPACE) : "[" + std::string(WHITE_SPACE) + "]";
            else if (e == 'S' && !in_class) out += "[^" + std::string(WHITE_SPACE) + "]";
            else if (e == 'S') fail("%s: \\S inside [...] in the split regex is not supported", path.c_str());
            else { out += c; out += e; }
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = true;
            out += c;
            if (i + 1 < re.size() && re[i + 1] == '^') out += re[++i];
            if (i + 1 < re.size() && re[i + 1] == ']') out += re[++i];  // a leading ] is a literal
            continue;
        }
        if (c == ']' && in_class) in_class = false;
        out += c;
    }
    return out;
}

// The JIT compiles the pattern to machine code: several times faster.
static void compile_split_regex(Tokenizer& tok) {
    int err;
    PCRE2_SIZE at;
    std::string pattern = oniguruma_to_pcre2(tok.split_regex_source, tok.path);
    pcre2_code* code = pcre2_compile((PCRE2_SPTR)pattern.c_str(), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        fail("%s: split regex does not compile at offset %zu: %s", tok.path.c_str(), (size_t)at, (const char*)msg);
    }
    if (pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) != 0) LOGW(CAT_TOKENIZER, "tokenizer: regex JIT unavailable, matching interpreted (slower)");
    tok.split_regex.reset(code, [](pcre2_real_code_8* c) { pcre2_code_free(c); });
}

// A piece listed twice keeps its later id; an id listed twice, its later piece.
static void set_token(Tokenizer& tok, int id, std::string piece, bool added) {
    if (id < 0 || id >= tok.vocab_size) fail("%s: token id %d out of range", tok.path.c_str(), id);
    uint32_t h = piece_hash(piece);
    size_t slot = pieces_find(tok, piece, h);
    tok.id_to_bytes[id] = piece_to_bytes(piece);
    tok.id_to_piece[id] = std::move(piece);
    tok.id_is_added[id] = added;
    tok.piece_to_id.slots[slot] = (uint64_t)h << 32 | ((uint32_t)id + 1);
}

// Everything that follows from the parsed file: ids, added tokens, merges,
// normalizer, pre-tokenizer, decoder.
static void build_tokenizer(Tokenizer& tok, json& j, std::vector<std::pair<std::string, int>>& vocab,
                            const std::vector<std::string>& merge_parts) {
    if (!j.is_object() || !j.contains("model") || json_str(j["model"], "type") != "BPE")
        fail("%s: model.type is not BPE", tok.path.c_str());
    if (vocab.empty()) fail("%s: model.vocab is missing or empty", tok.path.c_str());
    const json& model = j["model"];
    if (!json_str(model, "continuing_subword_prefix").empty() || !json_str(model, "end_of_word_suffix").empty())
        fail("%s: subword prefixes/suffixes are not supported (not a byte-level BPE)", tok.path.c_str());
    if (model.contains("dropout") && model["dropout"].is_number() && model["dropout"].get<double>() > 0)
        LOGW(CAT_TOKENIZER, "tokenizer: BPE dropout is a training option; ignored");
    if (json_flag(model, "ignore_merges", false)) fail("%s: BPE ignore_merges=true is not supported", tok.path.c_str());

    // Ids: the vocab and the added tokens together decide the size.
    const json empty = json::array();
    const json& added = j.contains("added_tokens") && j["added_tokens"].is_array() ? j["added_tokens"] : empty;
    int max_id = -1;
    for (auto& v : vocab) max_id = std::max(max_id, v.second);
    for (const json& a : added) max_id = std::max(max_id, a.value("id", -1));
    if (max_id >= (1 << 24)) fail("%s: token id %d is implausibly large", tok.path.c_str(), max_id);
    tok.vocab_size = max_id + 1;
    tok.id_to_piece.assign(tok.vocab_size, "");
    tok.id_to_bytes.assign(tok.vocab_size, "");
    tok.id_is_added.assign(tok.vocab_size, 0);
    pieces_init(tok.piece_to_id, vocab.size() + added.size());
    for (auto& v : vocab) set_token(tok, v.second, std::move(v.first), false);
    for (const json& a : added) {
        AddedToken t;
        t.content = json_str(a, "content");
        t.id = a.value("id", -1);
        t.special = json_flag(a, "special", false);
        if (t.content.empty()) fail("%s: added token %d has no content", tok.path.c_str(), t.id);
        // Options that make an added token swallow the spaces around it, or
        // match only as a whole word: Qwen's tokens use none of them, and
        // ignoring one would give other ids than Hugging Face, so refuse.
        for (const char* option : {"lstrip", "rstrip", "single_word"})
            if (json_flag(a, option, false)) fail("%s: added token %s: %s=true is not supported", tok.path.c_str(), t.content.c_str(), option);
        set_token(tok, t.id, t.content, true);
        tok.added.push_back(t);
    }
    // Longest first, so that at one position the longest added token wins.
    std::stable_sort(tok.added.begin(), tok.added.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
    std::fill(tok.added_first_byte, tok.added_first_byte + 256, false);
    for (auto& t : tok.added) tok.added_first_byte[(unsigned char)t.content[0]] = true;

    // Every byte's own token: where BPE starts from.
    for (int b = 0; b < 256; b++) {
        std::string piece;
        utf8_append(piece, byte_to_char(b));
        tok.byte_to_id[b] = pieces_get(tok, piece);
        if (tok.byte_to_id[b] < 0) LOGW(CAT_TOKENIZER, "tokenizer: byte 0x%02x has no token; it will be dropped, as Hugging Face does", b);
    }

    // Merges, as ids: (left, right) -> rank and the id of left+right. A BPE
    // trainer gives merge m's result the id 256 + m (true of every merge in
    // Qwen's file), so that id is tried first -- one string compare instead
    // of a hash lookup -- and looked up properly when it is not the one.
    tok.num_merges = (int)(merge_parts.size() / 2);
    merges_init(tok.merges, tok.num_merges);
    std::string joined;
    for (int m = 0; m < tok.num_merges; m++) {
        const std::string& left = merge_parts[2 * m];
        const std::string& right = merge_parts[2 * m + 1];
        int a = pieces_get(tok, left), b = pieces_get(tok, right), c = 256 + m;
        const std::string* guess = c < tok.vocab_size ? &tok.id_to_piece[c] : nullptr;
        if (!guess || guess->size() != left.size() + right.size() || guess->compare(0, left.size(), left) != 0 ||
            guess->compare(left.size(), right.size(), right) != 0)
            c = pieces_get(tok, joined.assign(left).append(right));
        if (a < 0 || b < 0 || c < 0)
            fail("%s: merge %d (\"%s\" \"%s\") uses a piece not in the vocab", tok.path.c_str(), m, left.c_str(), right.c_str());
        merges_put(tok.merges, a, b, Merge{m, c});
    }

    // Normalizer: NFC or nothing.
    if (j.contains("normalizer") && !j["normalizer"].is_null()) {
        const json& n = j["normalizer"];
        json steps = json_str(n, "type") == "Sequence" ? n.value("normalizers", json::array()) : json::array({n});
        for (const json& s : steps) {
            if (json_str(s, "type") != "NFC") fail("%s: normalizer \"%s\" is not supported (only NFC)", tok.path.c_str(), json_str(s, "type").c_str());
            tok.nfc = true;
        }
    }
    bool byte_level = false;
    if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null()) read_pre_tokenizer(tok, j["pre_tokenizer"], byte_level);
    if (!byte_level) fail("%s: no ByteLevel pre-tokenizer (only byte-level BPE is supported)", tok.path.c_str());
    if (!j.contains("decoder") || json_str(j["decoder"], "type") != "ByteLevel") fail("%s: decoder is not ByteLevel", tok.path.c_str());
    if (!tok.split_regex_source.empty()) compile_split_regex(tok);
}

void tokenizer_load(Tokenizer& tok, const std::string& path) {
    auto t0 = std::chrono::steady_clock::now();
    tok = Tokenizer();
    std::string dir, text;
    tok.path = path;
    if (read_file(path + "/tokenizer.json", text)) { dir = path; tok.path = path + "/tokenizer.json"; }
    else if (!read_file(path, text)) fail("%s: cannot read (give a model folder or a tokenizer.json)", path.c_str());
    else dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));

    std::vector<std::pair<std::string, int>> vocab;
    std::vector<std::string> merge_parts;
    vocab.reserve(text.size() / 40);  // guesses that avoid regrowing: ~75 bytes per vocab entry + merge
    merge_parts.reserve(text.size() / 20);
    std::string rest = scan_tokenizer_json(text, tok.path, vocab, merge_parts);
    json j = json::parse(rest, nullptr, false);
    if (j.is_discarded()) fail("%s: not valid JSON", tok.path.c_str());
    try {
        build_tokenizer(tok, j, vocab, merge_parts);
    } catch (const json::exception& e) {  // a field of the wrong type, e.g. "id": "7"
        fail("%s: %s", tok.path.c_str(), e.what());
    }
    // tokenizer_config.json: optional; only the eos token and the chat template.
    std::string config_text;
    if (read_file(dir + "/tokenizer_config.json", config_text)) {
        json c = json::parse(config_text, nullptr, false);
        if (c.is_object()) {
            if (c.contains("eos_token") && c["eos_token"].is_string()) tok.eos_token = c["eos_token"];
            if (c.contains("eos_token") && c["eos_token"].is_object()) tok.eos_token = json_str(c["eos_token"], "content");
            tok.chat_template = json_str(c, "chat_template");
        } else LOGW(CAT_TOKENIZER, "tokenizer: %s/tokenizer_config.json is not valid JSON; ignored", dir.c_str());
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    LOGI(CAT_TOKENIZER, "tokenizer: %s: %d ids (%zu added), %d merges, loaded in %.0f ms", tok.path.c_str(),
         tok.vocab_size, tok.added.size(), tok.num_merges, ms);
}

// ---------------------------------------------------------------------------
// BPE on one pre-token. Start from one token per byte, then repeatedly merge
// the adjacent pair with the lowest rank (leftmost first on a tie) until no
// adjacent pair is in the merge table. Rescanning the whole word after each
// merge would be O(n^2); instead the symbols form a linked list and the
// candidate pairs sit in a min-heap keyed by (rank, position). A merge only
// creates two new candidates (with the left and right neighbour); heap
// entries made stale by earlier merges are recognised and skipped when
// popped. This is also how Hugging Face orders merges, so ties go the same way.
struct BpeScratch {
    std::vector<int> id, prev, next;
    std::vector<std::pair<int, int>> heap;  // (rank, position of the pair's left symbol)
};

static void heap_push_pair(const Tokenizer& tok, BpeScratch& w, int left) {
    int right = w.next[left];
    if (right < 0) return;
    const Merge* m = merges_get(tok.merges, w.id[left], w.id[right]);
    if (!m) return;
    w.heap.emplace_back(m->rank, left);
    std::push_heap(w.heap.begin(), w.heap.end(), std::greater<std::pair<int, int>>());
}

// Not static, so the exercise chapters/bpe can put a student's version in its place.
void bpe_word(const Tokenizer& tok, const unsigned char* s, int n, std::vector<int>& out, BpeScratch& w) {
    w.id.clear(); w.prev.clear(); w.next.clear(); w.heap.clear();
    for (int i = 0; i < n; i++) {
        int id = tok.byte_to_id[s[i]];
        if (id < 0) continue;  // a byte without a token is dropped (Hugging Face does the same)
        int k = (int)w.id.size();
        w.id.push_back(id);
        w.prev.push_back(k - 1);
        w.next.push_back(-1);
        if (k > 0) w.next[k - 1] = k;
    }
    if (w.id.empty()) return;
    for (int i = 0; i + 1 < (int)w.id.size(); i++) heap_push_pair(tok, w, i);
    while (!w.heap.empty()) {
        std::pop_heap(w.heap.begin(), w.heap.end(), std::greater<std::pair<int, int>>());
        auto [rank, left] = w.heap.back();
        w.heap.pop_back();
        int right = w.next[left];
        if (w.id[left] < 0 || right < 0) continue;  // stale: left was merged away or is last
        const Merge* m = merges_get(tok.merges, w.id[left], w.id[right]);
        if (!m || m->rank != rank) continue;  // stale: this pair no longer stands here
        w.id[left] = m->result;               // left absorbs right
        w.id[right] = -1;
        w.next[left] = w.next[right];
        if (w.next[right] >= 0) w.prev[w.next[right]] = left;
        if (w.prev[left] >= 0) heap_push_pair(tok, w, w.prev[left]);
        heap_push_pair(tok, w, left);
    }
    for (int i = 0; i >= 0; i = w.next[i]) out.push_back(w.id[i]);
}

// ---------------------------------------------------------------------------
// NFC: canonical composition, so "e" + U+0301 (combining acute) and the
// single character "é" encode the same. utf8proc does the work, but running
// it over all the text is the slowest step of encoding, and nearly all text
// is NFC already. So only the stretches that might change go through it.
//
// A character is "stable" when NFC can neither change it nor attach it to
// the character before: everything below U+0300, and any character with
// combining class 0 that has no canonical decomposition and is never the
// second half of a composition (utf8proc marks those with comb_index >=
// 0x8000; Hangul vowel and final jamo compose by formula, so they are listed
// by range). An unstable character is normalized together with the stable
// one before it (which it may compose with: "e" + U+0301) and the unstable
// ones after it; the stable characters around such stretches are copied.
static bool nfc_stable(utf8proc_int32_t cp) {
    if (cp < 0x300) return true;
    if (cp >= 0x1160 && cp <= 0x11FF) return false;
    const utf8proc_property_t* p = utf8proc_get_property(cp);
    bool second_half = p->comb_index != UINT16_MAX && p->comb_index >= 0x8000;
    bool canonical_decomposition = p->decomp_type == 0 && p->decomp_seqindex != UINT16_MAX;
    return p->combining_class == 0 && !second_half && !canonical_decomposition;
}

// The character at u[at] (valid UTF-8, checked before): its code point and length.
static size_t char_at(const utf8proc_uint8_t* u, size_t n, size_t at, utf8proc_int32_t& cp) {
    if (u[at] < 0x80) { cp = u[at]; return 1; }
    return (size_t)utf8proc_iterate(u + at, (utf8proc_ssize_t)(n - at), &cp);
}

static std::string nfc(const std::string& s) {
    const utf8proc_uint8_t* u = (const utf8proc_uint8_t*)s.data();
    size_t n = s.size(), i = 0, copied = 0, last_stable = 0;
    std::string out;
    utf8proc_int32_t cp;
    while (i < n) {
        size_t len = char_at(u, n, i, cp);
        if (nfc_stable(cp)) { last_stable = i; i += len; continue; }
        size_t end = i + len;  // the stretch runs up to the next stable character
        while (end < n) {
            size_t l = char_at(u, n, end, cp);
            if (nfc_stable(cp)) break;
            end += l;
        }
        utf8proc_uint8_t* composed = nullptr;
        utf8proc_ssize_t m = utf8proc_map(u + last_stable, (utf8proc_ssize_t)(end - last_stable), &composed,
                                          (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
        if (m < 0) fail("tokenizer: NFC failed: %s", utf8proc_errmsg(m));
        out.append(s, copied, last_stable - copied).append((const char*)composed, (size_t)m);
        free(composed);
        copied = i = end;
    }
    if (copied == 0) return s;  // already NFC: the common case
    return out.append(s, copied, std::string::npos);
}

// Everything one encode call carries from segment to segment: the regex's
// match buffer, the merge scratch space, and a cache of the pre-tokens seen
// so far (text repeats the same words a lot; a cache hit copies ids instead
// of merging again). The cache lives for one call, so encode needs no lock;
// its keys point into the normalized texts, which `texts` keeps alive.
struct EncodeState {
    pcre2_match_data* match = nullptr;
    BpeScratch scratch;
    std::deque<std::string> texts;
    std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;  // pre-token -> span of `out`
    std::vector<int>* out;
};

static void encode_pretoken(const Tokenizer& tok, const char* s, size_t n, EncodeState& st) {
    std::vector<int>& out = *st.out;
    if (n == 1 && tok.byte_to_id[(unsigned char)s[0]] >= 0) { out.push_back(tok.byte_to_id[(unsigned char)s[0]]); return; }
    std::string_view key(s, n);
    auto hit = st.cache.find(key);
    if (hit != st.cache.end()) {
        for (uint32_t i = 0; i < hit->second.second; i++) out.push_back(out[hit->second.first + i]);
        return;
    }
    size_t start = out.size();
    bpe_word(tok, (const unsigned char*)s, (int)n, out, st.scratch);
    if (st.cache.size() < 200000) st.cache.emplace(key, std::make_pair((uint32_t)start, (uint32_t)(out.size() - start)));
}

// One stretch of text between added tokens: normalize, split, merge.
// "Isolated" splitting: each regex match is a pre-token, and so is any text
// between two matches (Qwen's regex leaves no gaps, but a regex may).
static void encode_plain(const Tokenizer& tok, const std::string& raw, EncodeState& st) {
    st.texts.push_back(tok.nfc ? nfc(raw) : raw);
    const std::string& text = st.texts.back();
    if (!tok.split_regex) { if (!text.empty()) encode_pretoken(tok, text.data(), text.size(), st); return; }
    const pcre2_code* re = tok.split_regex.get();
    size_t pos = 0, gap = 0;
    while (pos < text.size()) {
        int rc = pcre2_match(re, (PCRE2_SPTR)text.data(), text.size(), pos, PCRE2_NO_UTF_CHECK, st.match, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            fail("tokenizer: split regex failed at byte %zu: %s", pos, (const char*)msg);
        }
        PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.match);
        size_t b = ov[0], e = ov[1];
        if (e == b) {  // an empty match splits nothing: step over one character
            pos = b + 1;
            while (pos < text.size() && ((unsigned char)text[pos] & 0xC0) == 0x80) pos++;
            continue;
        }
        if (b > gap) encode_pretoken(tok, text.data() + gap, b - gap, st);
        encode_pretoken(tok, text.data() + b, e - b, st);
        pos = gap = e;
    }
    if (text.size() > gap) encode_pretoken(tok, text.data() + gap, text.size() - gap, st);
}

std::vector<int> tokenizer_encode(const Tokenizer& tok, const std::string& text) {
    if (tok.vocab_size == 0) fail("tokenizer: encode before tokenizer_load");
    // Refuse invalid UTF-8 up front: the regex and NFC both assume valid text,
    // and guessing a repair would silently change what the model reads.
    const unsigned char* s = (const unsigned char*)text.data();
    for (size_t i = 0; i < text.size();) {
        Utf8Scan u = utf8_scan(s + i, text.size() - i);
        if (!u.valid) fail("tokenizer: input is not valid UTF-8 (byte 0x%02x at offset %zu)", s[i], i);
        i += u.len;
    }
    std::vector<int> out;
    out.reserve(text.size() / 3 + 16);
    EncodeState st;
    st.out = &out;
    if (tok.split_regex) st.match = pcre2_match_data_create_from_pattern(tok.split_regex.get(), nullptr);
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> guard(st.match, pcre2_match_data_free);

    // Added tokens first: at each position the longest added token that
    // starts there wins; the text between them is encoded normally. So
    // "<|im_start|>" typed in the text IS the control token -- the same as
    // Hugging Face with default settings (see the chapter on why that matters).
    size_t plain_start = 0, i = 0;
    while (i < text.size()) {
        const AddedToken* hit = nullptr;
        if (tok.added_first_byte[s[i]])
            for (const AddedToken& t : tok.added)
                if (text.compare(i, t.content.size(), t.content) == 0) { hit = &t; break; }
        if (!hit) { i++; continue; }
        if (i > plain_start) encode_plain(tok, text.substr(plain_start, i - plain_start), st);
        out.push_back(hit->id);
        plain_start = i = i + hit->content.size();
    }
    if (text.size() > plain_start) encode_plain(tok, text.substr(plain_start), st);
    return out;
}

// ---------------------------------------------------------------------------
// Decoding: each id's bytes, concatenated, then repaired into valid UTF-8.
// An id outside the vocabulary is an error (Hugging Face silently skips it;
// here a bad id is more likely a bug worth seeing).
static const std::string& checked_bytes(const Tokenizer& tok, int id) {
    if (id < 0 || id >= tok.vocab_size || tok.id_to_piece[id].empty())
        fail("tokenizer: id %d is not in the vocabulary (0..%d)", id, tok.vocab_size - 1);
    return tok.id_to_bytes[id];
}

std::string token_bytes(const Tokenizer& tok, int id) { return checked_bytes(tok, id); }

int token_id(const Tokenizer& tok, const std::string& content) { return pieces_get(tok, content); }

int tokenizer_vocab_size(const Tokenizer& tok) { return tok.vocab_size; }

std::string tokenizer_decode(const Tokenizer& tok, const std::vector<int>& ids) {
    std::string bytes;
    for (int id : ids) bytes += checked_bytes(tok, id);
    return utf8_sanitize(bytes);
}

// Streaming: emit everything up to the last complete character; keep a
// trailing start of a character (e.g. the first 2 bytes of a 3-byte CJK
// character) in `pending` until the next token completes it. Bytes that can
// never become valid are emitted at once as U+FFFD.
std::string StreamDecoder::push(const Tokenizer& tok, int id) {
    pending += checked_bytes(tok, id);
    std::string out;
    const unsigned char* s = (const unsigned char*)pending.data();
    size_t n = pending.size(), i = 0;
    while (i < n) {
        Utf8Scan u = utf8_scan(s + i, n - i);
        if (u.truncated) break;
        if (u.valid) out.append(pending, i, u.len);
        else out += REPLACEMENT_CHAR;
        i += u.len;
    }
    pending.erase(0, i);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out = utf8_sanitize(pending);
    pending.clear();
    return out;
}

// ---------------------------------------------------------------------------
// The chat template. Qwen2.5's tokenizer_config.json holds it as a Jinja
// program; for plain messages (no tools) it comes down to ChatML:
//   <|im_start|>{role}\n{content}<|im_end|>\n   for each message,
// a default system message first when the conversation has none, and
// "<|im_start|>assistant\n" at the end to ask the model for its turn.
const char* const QWEN_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

std::string apply_chat_template(const std::vector<ChatMessage>& msgs, bool add_generation_prompt) {
    std::string out;
    if (msgs.empty() || msgs[0].role != "system")
        out += std::string("<|im_start|>system\n") + QWEN_DEFAULT_SYSTEM + "<|im_end|>\n";
    for (const ChatMessage& m : msgs) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}
