// tokenizer.cpp — byte-level BPE, the way Hugging Face's `tokenizers` runs a
// tokenizer.json like Qwen2.5's. Encoding is a pipeline of five steps:
//
//   text --split out added tokens--> pieces of plain text
//        --NFC--> normalized text --split regex--> pre-tokens ("Hello", " world", "!")
//        --bytes, then merges by rank--> token ids
//
// and decoding is the short way back: ids -> bytes -> text (UTF-8 repaired).
// Reading tokenizer.json into the tables used here is tokenizer_load.cpp.
// The chapter book/07-tokenizer.md walks through every step with examples.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer.h"
#include <pcre2.h>
#include <utf8proc.h>
#include <algorithm>
#include <cstdio>
#include <deque>
#include <string_view>
#include <unordered_map>
#include "common.h"
#include "logging.h"

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

// ---------------------------------------------------------------------------
// The merge table: (left id, right id) -> Merge, open addressing with linear
// probing, sized to a power of two at most two thirds full. std::unordered_map
// would do, but this lookup is the inner loop of encoding.
// Not static: the exercise chapters/bpe calls it from a student's bpe_word.
const Merge* merges_get(const MergeTable& t, int left, int right) {
    uint64_t key = pair_key(left, right);
    for (size_t i = pair_slot(key, t.mask);; i = (i + 1) & t.mask) {
        if (t.keys[i] == key) return &t.values[i];
        if (t.keys[i] == 0) return nullptr;
    }
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

// Qwen3's template (tokenizer_config.json of Qwen3-0.6B), for plain messages,
// differs in three places, each a guarded line below:
//   - no default system message;
//   - an assistant turn before the last user message keeps only its answer:
//     "<think>...</think>" is cut, so old reasoning does not fill the context;
//   - thinking off (--no-think): the generation prompt is followed by an empty
//     think block, and the model, trained on that form, answers directly.
std::string apply_chat_template(const std::vector<ChatMessage>& msgs, bool add_generation_prompt, const ChatFormat& fmt) {
    const bool qwen3 = fmt.style == ChatStyle::Qwen3;
    std::string out;
    if (!qwen3 && (msgs.empty() || msgs[0].role != "system"))
        out += std::string("<|im_start|>system\n") + QWEN_DEFAULT_SYSTEM + "<|im_end|>\n";
    size_t last_user = msgs.size();
    for (size_t i = 0; i < msgs.size(); i++)
        if (msgs[i].role == "user") last_user = i;
    for (size_t i = 0; i < msgs.size(); i++) {
        std::string content = msgs[i].content;
        size_t end = content.find("</think>");
        if (qwen3 && msgs[i].role == "assistant" && i < last_user && end != std::string::npos) {
            content.erase(0, end + 8);
            content.erase(0, content.find_first_not_of('\n') == std::string::npos ? content.size() : content.find_first_not_of('\n'));
        }
        out += "<|im_start|>" + msgs[i].role + "\n" + content + "<|im_end|>\n";
    }
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    if (add_generation_prompt && qwen3 && !fmt.think) out += "<think>\n\n</think>\n\n";
    return out;
}
