// tokenizer.h — text <-> token ids, exactly as Hugging Face's `tokenizers`
// does it for a byte-level BPE tokenizer.json (Qwen2.5's, or any file built
// the same way: NFC normalizer, a Split regex, ByteLevel, ranked merges).
//
// Nothing about Qwen is hard-coded: vocab size, merges, added tokens and their
// ids, and the split regex all come from the file. See book/07-tokenizer.md.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct pcre2_real_code_8;  // the compiled split regex (PCRE2), kept opaque here

// A token the file lists under "added_tokens": matched verbatim in the text
// before any other processing (e.g. <|im_start|>). `special` ones are the
// control tokens a chat template uses; decode treats both kinds the same.
struct AddedToken {
    std::string content;
    int id = -1;
    bool special = false;
};

// What one merge does: the pair (left, right) becomes `result`; lower rank
// means the merge was learned earlier and is applied first.
struct Merge {
    int rank;
    int result;
};

// Open-addressing hash table from a pair of ids to its Merge. The merge loop
// looks pairs up constantly, so this is the hot table of the encoder.
struct MergeTable {
    std::vector<uint64_t> keys;  // (left << 32 | right) + 1; 0 marks an empty slot
    std::vector<Merge> values;
    uint64_t mask = 0;
};
// Where a pair lives in a MergeTable: its key (0 is kept for "empty"), and
// the first slot to probe (a multiplicative hash of the key).
static inline uint64_t pair_key(int left, int right) { return ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1; }
static inline size_t pair_slot(uint64_t key, uint64_t mask) { return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask; }

// Open-addressing hash table from a piece (the token's string in the file)
// to its id. It stores only ids; the strings are id_to_piece's.
struct PieceIndex {
    std::vector<uint64_t> slots;  // the piece's hash << 32 | (id + 1); 0 marks an empty slot
    uint64_t mask = 0;
};

struct Tokenizer {
    std::string path;                      // the tokenizer.json it came from
    std::vector<std::string> id_to_bytes;  // raw bytes each id stands for ("" for unused ids)
    std::vector<std::string> id_to_piece;  // the id's string as written in the file ("Ġthe", "<|im_end|>")
    std::vector<uint8_t> id_is_added;      // 1 for added tokens
    PieceIndex piece_to_id;                // vocab + added tokens, by file string
    MergeTable merges;
    int num_merges = 0;
    int byte_to_id[256] = {};  // the single-byte token for each byte value (-1: none)

    std::vector<AddedToken> added;  // longest content first
    bool added_first_byte[256] = {};  // can an added token start with this byte?

    bool nfc = false;            // normalizer is NFC (the only one supported)
    std::string split_regex_source;
    std::shared_ptr<pcre2_real_code_8> split_regex;  // null: no Split step
    int vocab_size = 0;                              // largest id + 1

    // From tokenizer_config.json, when the folder has one.
    std::string eos_token;      // e.g. "<|im_end|>" for chat models
    std::string chat_template;  // the Jinja source; apply_chat_template is its C++ twin
};

// Loads a tokenizer from a model folder (that holds tokenizer.json) or from
// the path of a tokenizer.json itself. Throws LanternError on any problem.
// A .gguf file's tokenizer is gguf_load.h's (gguf_load_tokenizer).
void tokenizer_load(Tokenizer& tok, const std::string& path);
// The same from the text of a tokenizer.json (`path` names it in errors).
void tokenizer_load_text(Tokenizer& tok, const std::string& text, const std::string& path);

// Text -> ids. Added/special tokens written in the text become their ids.
// Throws if the text is not valid UTF-8.
std::vector<int> tokenizer_encode(const Tokenizer& tok, const std::string& text);

// Ids -> text. Bytes that do not form valid UTF-8 become U+FFFD, one per
// maximal ill-formed subsequence. Throws on an id outside the vocabulary.
std::string tokenizer_decode(const Tokenizer& tok, const std::vector<int>& ids);

std::string token_bytes(const Tokenizer& tok, int id);           // raw bytes of one token
int token_id(const Tokenizer& tok, const std::string& content);  // file string -> id, -1 if none
int tokenizer_vocab_size(const Tokenizer& tok);                  // largest id + 1

// Replaces each maximal ill-formed UTF-8 subsequence with U+FFFD.
std::string utf8_sanitize(const std::string& bytes);

// Decoding while generating: tokens arrive one at a time and a character may
// be split across two of them. push() returns only complete UTF-8; the start
// of an unfinished character waits for the next token. flush() ends the
// stream (a character still unfinished becomes U+FFFD).
struct StreamDecoder {
    std::string pending;
    std::string push(const Tokenizer& tok, int id);
    std::string flush();
};

// The chat template: Qwen2.5's ChatML.
struct ChatMessage {
    std::string role, content;
};
extern const char* const QWEN_DEFAULT_SYSTEM;
// The chat templates Lantern writes, one per style a family of arch.h's
// table names (Arch::chat):
//   Qwen2  Qwen2.5's ChatML, with its default system message;
//   Qwen3  no default system message, old answers' reasoning cut, and a
//          generation prompt that may switch thinking off.
enum class ChatStyle { Qwen2, Qwen3 };
// A style and its thinking switch (think = false: enable_thinking=false in
// Jinja; only a style with thinking reads it).
struct ChatFormat {
    ChatStyle style = ChatStyle::Qwen2;
    bool think = true;
};
// Qwen2: when msgs has no system message, its default one is prepended.
// add_generation_prompt ends with "<|im_start|>assistant\n" (Qwen3 without
// thinking: followed by an empty "<think>\n\n</think>\n\n").
std::string apply_chat_template(const std::vector<ChatMessage>& msgs, bool add_generation_prompt,
                                const ChatFormat& fmt = ChatFormat());
