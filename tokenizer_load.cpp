// tokenizer_load.cpp — reading tokenizer.json (and tokenizer_config.json)
// into the tables of a Tokenizer. Loading is its own idea, so its own file:
// the byte-level alphabet, the two hash tables, a fast hand-written reader
// for the vocab and merges, nlohmann for the small sections, and the checks
// that turn a damaged file into a one-line error. What the tables are for is
// tokenizer.cpp's story.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <sys/stat.h>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>
#include "common.h"
#include "json_read.h"
#include "logging.h"
#include "tokenizer.h"

using json = nlohmann::json;

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
// Building the merge table (tokenizer.h describes its layout).
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
// (151,387 pairs of pieces). Building nlohmann's DOM of the whole file, or
// even streaming through it as SAX events, is too slow for something every
// run does first (book/07-tokenizer.md measures both). Those two sections
// only hold strings, integers and pairs, so a small hand-written reader
// walks the top of the file, parses them itself, and hands everything else
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
        int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (digit < 0) scan_fail(s, "bad \\u escape (not four hex digits)");
        v = v * 16 + digit;
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
// Recursive, so the depth is limited as json_read.h's rule says: a file of
// 100,000 nested '[' would otherwise overflow the stack.
static void skip_value(JsonScan& s, int depth = 1) {
    std::string ignored;
    char c = peek(s);
    if (c == '"') scan_string(s, ignored);
    else if (c == '{' || c == '[') {
        if (depth > JSON_MAX_DEPTH) scan_fail(s, strprintf("JSON nested deeper than %d levels", JSON_MAX_DEPTH).c_str());
        char close = c == '{' ? '}' : ']';
        s.p++;
        if (peek(s) == close) { s.p++; return; }
        do {
            if (close == '}') { scan_string(s, ignored); expect(s, ':'); }
            skip_value(s, depth + 1);
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

// False when `path` is missing or unreadable. A directory is refused with an
// error naming it: fopen succeeds on one, and ftell then returns nonsense.
static bool read_file(const std::string& path, std::string& out) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) fail("%s: is a directory, not a file", path.c_str());
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

// Fields of the small sections: absent means empty / the default; present
// with another type is an error naming the key (json_read.h).
static std::string field_str(const Tokenizer& tok, const json& j, const char* name) {
    return json_str(j, name, "", tok.path);
}
static bool field_flag(const Tokenizer& tok, const json& j, const char* name, bool fallback) {
    return json_bool(j, name, fallback, tok.path);
}

// GPT-2's split regex: what a ByteLevel pre-tokenizer with use_regex=true
// applies when the file gives no Split step of its own.
static const char GPT2_SPLIT_REGEX[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// Reads the pre_tokenizer section. Supported: the pieces a byte-level BPE is
// built from -- Split (a regex, "Isolated": every match and every gap between
// matches is a pre-token), ByteLevel, or a Sequence of them. Anything else is
// refused rather than silently encoded differently from Hugging Face.
static void read_pre_tokenizer(Tokenizer& tok, const json& p, bool& byte_level) {
    std::string type = field_str(tok, p, "type");
    if (type == "Sequence") {
        for (const json& step : p.value("pretokenizers", json::array())) read_pre_tokenizer(tok, step, byte_level);
    } else if (type == "ByteLevel") {
        byte_level = true;
        if (field_flag(tok, p, "add_prefix_space", false)) fail("%s: ByteLevel add_prefix_space=true is not supported", tok.path.c_str());
        if (field_flag(tok, p, "use_regex", true)) {
            if (!tok.split_regex_source.empty()) fail("%s: two split regexes", tok.path.c_str());
            tok.split_regex_source = GPT2_SPLIT_REGEX;
        }
    } else if (type == "Split") {
        std::string regex = p.contains("pattern") ? field_str(tok, p["pattern"], "Regex") : "";
        if (regex.empty()) fail("%s: Split needs a \"Regex\" pattern", tok.path.c_str());
        if (field_str(tok, p, "behavior") != "Isolated" || field_flag(tok, p, "invert", false))
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
    // A PCRE2 built without the JIT (the browser's: a page cannot make
    // machine code) matches interpreted as planned, so only a library that
    // has the JIT and fails to use it is worth a warning.
    uint32_t has_jit = 0;
    pcre2_config(PCRE2_CONFIG_JIT, &has_jit);
    if (pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) != 0 && has_jit)
        LOGW(CAT_TOKENIZER, "tokenizer: regex JIT unavailable, matching interpreted (slower)");
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
    if (!j.is_object() || !j.contains("model") || field_str(tok, j["model"], "type") != "BPE")
        fail("%s: model.type is not BPE", tok.path.c_str());
    if (vocab.empty()) fail("%s: model.vocab is missing or empty", tok.path.c_str());
    const json& model = j["model"];
    if (!field_str(tok, model, "continuing_subword_prefix").empty() || !field_str(tok, model, "end_of_word_suffix").empty())
        fail("%s: subword prefixes/suffixes are not supported (not a byte-level BPE)", tok.path.c_str());
    if (json_number(model, "dropout", 0, 0, 1, tok.path) > 0)
        LOGW(CAT_TOKENIZER, "tokenizer: BPE dropout is a training option; ignored");
    if (field_flag(tok, model, "ignore_merges", false)) fail("%s: BPE ignore_merges=true is not supported", tok.path.c_str());

    // Ids: the vocab and the added tokens together decide the size.
    const json empty = json::array();
    const json& added = j.contains("added_tokens") && j["added_tokens"].is_array() ? j["added_tokens"] : empty;
    // An added token's id is read through json_read.h: 7.9 or 4e92 is an
    // error, not 7 or undefined behaviour in a float-to-int conversion.
    std::vector<int> added_ids;
    for (size_t i = 0; i < added.size(); i++) {
        std::string key = strprintf("added_tokens[%zu].id", i);
        if (!json_has(added[i], "id")) fail("%s: \"%s\" is missing", tok.path.c_str(), key.c_str());
        added_ids.push_back((int)json_as_int(added[i]["id"], key, 0, (1 << 24) - 1, tok.path));
    }
    int max_id = -1;
    for (auto& v : vocab) max_id = std::max(max_id, v.second);
    for (int id : added_ids) max_id = std::max(max_id, id);
    if (max_id >= (1 << 24)) fail("%s: token id %d is implausibly large", tok.path.c_str(), max_id);
    tok.vocab_size = max_id + 1;
    tok.id_to_piece.assign(tok.vocab_size, "");
    tok.id_to_bytes.assign(tok.vocab_size, "");
    tok.id_is_added.assign(tok.vocab_size, 0);
    pieces_init(tok.piece_to_id, vocab.size() + added.size());
    for (auto& v : vocab) set_token(tok, v.second, std::move(v.first), false);
    for (size_t i = 0; i < added.size(); i++) {
        const json& a = added[i];
        AddedToken t;
        t.content = field_str(tok, a, "content");
        t.id = added_ids[i];
        t.special = field_flag(tok, a, "special", false);
        if (t.content.empty()) fail("%s: added token %d has no content", tok.path.c_str(), t.id);
        // Options that make an added token swallow the spaces around it, or
        // match only as a whole word: Qwen's tokens use none of them, and
        // ignoring one would give other ids than Hugging Face, so refuse.
        for (const char* option : {"lstrip", "rstrip", "single_word"})
            if (field_flag(tok, a, option, false)) fail("%s: added token %s: %s=true is not supported", tok.path.c_str(), t.content.c_str(), option);
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
        json steps = field_str(tok, n, "type") == "Sequence" ? n.value("normalizers", json::array()) : json::array({n});
        for (const json& s : steps) {
            if (field_str(tok, s, "type") != "NFC") fail("%s: normalizer \"%s\" is not supported (only NFC)", tok.path.c_str(), field_str(tok, s, "type").c_str());
            tok.nfc = true;
        }
    }
    bool byte_level = false;
    if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null()) read_pre_tokenizer(tok, j["pre_tokenizer"], byte_level);
    if (!byte_level) fail("%s: no ByteLevel pre-tokenizer (only byte-level BPE is supported)", tok.path.c_str());
    if (!j.contains("decoder") || field_str(tok, j["decoder"], "type") != "ByteLevel") fail("%s: decoder is not ByteLevel", tok.path.c_str());
    if (!tok.split_regex_source.empty()) compile_split_regex(tok);
}

void tokenizer_load_text(Tokenizer& tok, const std::string& text, const std::string& path) {
    tok = Tokenizer();
    tok.path = path;
    std::vector<std::pair<std::string, int>> vocab;
    std::vector<std::string> merge_parts;
    vocab.reserve(text.size() / 40);  // guesses that avoid regrowing: ~75 bytes per vocab entry + merge
    merge_parts.reserve(text.size() / 20);
    std::string rest = scan_tokenizer_json(text, tok.path, vocab, merge_parts);
    json j = json_parse(rest, tok.path);
    try {
        build_tokenizer(tok, j, vocab, merge_parts);
    } catch (const json::exception& e) {  // a field of the wrong type, e.g. "id": "7"
        fail("%s: %s", tok.path.c_str(), e.what());
    }
}

void tokenizer_load(Tokenizer& tok, const std::string& path) {
    auto t0 = std::chrono::steady_clock::now();
    std::string dir, text, file = path;
    struct stat st;
    bool folder = stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (folder) {
        if (!read_file(path + "/tokenizer.json", text)) fail("%s/tokenizer.json: not found or unreadable (the model folder needs its tokenizer)", path.c_str());
        dir = path;
        file = path + "/tokenizer.json";
    } else if (!read_file(path, text)) fail("%s: cannot read (give a model folder or a tokenizer.json)", path.c_str());
    else dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
    tokenizer_load_text(tok, text, file);
    // tokenizer_config.json: optional; only the eos token and the chat template.
    std::string config_text;
    if (read_file(dir + "/tokenizer_config.json", config_text)) {
        // Optional, so a damaged one is a warning; its fields are read by
        // the same rule as everything else. chat_template may also be a
        // list of named templates (newer files); only a string is used.
        std::string where = dir + "/tokenizer_config.json";
        json c;
        try {
            c = json_parse(config_text, where);
        } catch (const LanternError& e) {
            LOGW(CAT_TOKENIZER, "tokenizer: %s; ignored", e.what());
        }
        if (c.is_object()) {
            const json& eos = c.contains("eos_token") ? c["eos_token"] : json();
            tok.eos_token = eos.is_object() ? json_str(eos, "content", "", where) : json_str(c, "eos_token", "", where);
            if (json_has(c, "chat_template") && c["chat_template"].is_string()) tok.chat_template = c["chat_template"];
        }
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    LOGI(CAT_TOKENIZER, "tokenizer: %s: %d ids (%zu added), %d merges, loaded in %.0f ms", tok.path.c_str(),
         tok.vocab_size, tok.added.size(), tok.num_merges, ms);
}

int token_id(const Tokenizer& tok, const std::string& content) { return pieces_get(tok, content); }
