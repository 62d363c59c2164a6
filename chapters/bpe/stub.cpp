// chapters/bpe/stub.cpp — the BPE merge loop (book/07-tokenizer.md,
// "Merges, worked by hand").
//
// tokenizer_encode() splits text into pre-tokens (roughly: words with their
// leading space) and calls bpe_word() on each to turn its bytes into token
// ids. `make exercise EX=bpe` builds this file into the engine in place of
// tokenizer.cpp's bpe_word and checks it.
#include <vector>
#include "tokenizer.h"

struct BpeScratch;  // the engine's reusable scratch space (tokenizer.cpp): you may ignore it
// The merge of two adjacent ids, or nullptr when the pair never merges
// (tokenizer.cpp). A Merge (tokenizer.h) has a rank (its line in the file's
// merge list: lower = learned earlier = applied first) and the result's id.
const Merge* merges_get(const MergeTable& t, int left, int right);

// TODO(student): byte-pair encoding of one pre-token.
//
//   s, n   the pre-token's bytes, e.g. " lower" (6 bytes; n >= 1)
//   out    APPEND its token ids here: it already holds the ids of the text
//          before this pre-token, which must stay as they are
//
// 1. Start with one id per byte: tok.byte_to_id[s[i]] (a byte whose id is
//    -1 has no token: skip it).
// 2. Look at every adjacent pair (a, b) of the current ids and ask
//    merges_get(tok.merges, a, b). Of the pairs that merge, take the one
//    with the lowest rank; if that same rank appears twice, the leftmost.
// 3. Replace that pair by its result (the list gets one shorter) and go
//    back to 2, until no adjacent pair merges.
//
// Hints: lowest *rank* first, not leftmost first and not longest token
// first — the book's table walks " lower" through it step by step. A plain
// std::vector<int> and a rescan after every merge are fast enough here
// (the engine's version uses a heap to avoid the rescans).
void bpe_word(const Tokenizer& tok, const unsigned char* s, int n, std::vector<int>& out, BpeScratch& w) {
    // the stub: appends nothing
}
