// chapters/bpe-hard/stub.cpp — byte-pair encoding of one word from its
// contract (book/07-tokenizer.md).
//
// The harder variant of the bpe exercise: this file says what the ids must
// be, not how to find them. `make exercise EX=bpe-hard` builds it into the
// engine in place of tokenizer.cpp's bpe_word and runs the bpe checker.
#include <vector>
#include "tokenizer.h"

struct BpeScratch;  // the engine's scratch space (tokenizer.cpp): you may ignore it
// The merge of two adjacent ids, or nullptr (tokenizer.cpp); a Merge has a rank and a result id.
const Merge* merges_get(const MergeTable& t, int left, int right);

// TODO(student): the token ids of one pre-token.
//
//   s, n   the pre-token's bytes (n >= 1); tok.byte_to_id maps a byte to its id
//   out    append the ids: it holds the ids of the text before, which stay
//
// The contract: the ids are exactly those Hugging Face's tokenizers library
// gives for this pre-token with this merge list (tok.merges), for every
// input the checker tries: ASCII, long words, repeated letters, Chinese,
// emoji. Which merge may happen before which is for you to work out from
// the book's definition of BPE (Sennrich et al., 2016) and its table.
void bpe_word(const Tokenizer& tok, const unsigned char* s, int n, std::vector<int>& out, BpeScratch& w) {
    // the stub: appends nothing
}
