// kv_pages.h — a paged KV cache: one pool of fixed-size blocks shared by
// every sequence the server runs, and a block table per sequence.
//
// The one-sequence cache (net.h: KVCache) reserves --ctx positions up
// front. For many sequences at once that wastes most of the memory: a 40-token
// chat answer would hold 4,096 positions. Here memory is handed out one block
// of BLOCK positions at a time, as a sequence's tokens appear, and returned
// the moment it ends. A sequence's positions live in the blocks its table
// lists, in order:
//
//   pool:   [b0][b1][b2][b3][b4][b5] ...      (each block: every layer's keys
//   seq A:  table [0, 3]   positions 0-15 in b0, 16-31 in b3      and values
//   seq B:  table [1]      positions 0-15 in b1                   for BLOCK
//   free:   b2, b4, b5 ...                                        positions)
//
// This is the idea of vLLM's PagedAttention, without the GPU kernel: the
// attention here gathers a sequence's rows into one contiguous run first
// (net.cpp), so the attention kernels are the ones a single sequence uses.
#pragma once
#include <cstdint>
#include <vector>
#include "model.h"

struct KVPages {
    int block = 16;       // positions per block
    int n_blocks = 0;
    int n_layers = 0, kv_dim = 0;
    DType type = DType::F32;
    std::vector<uint8_t> k, v;   // [n_blocks, n_layers, block, kv_dim] of `type`
    std::vector<int> free_list;  // blocks nobody holds, taken from the back
    size_t elt() const { return type == DType::F32 ? 4 : 2; }
};

// A sequence's block table: position p is row p % block of blocks[p / block].
struct KVSeq {
    std::vector<int> blocks;
    int n_pos = 0;  // positions that have room (blocks.size() * block >= n_pos)
};

// A pool of n_tokens positions (rounded up to whole blocks).
void kv_pages_init(KVPages& kv, const Config& c, int n_tokens, DType type, int block = 16);
// Blocks a sequence of n positions needs.
int kv_blocks_for(const KVPages& kv, int n_pos);
int kv_blocks_free(const KVPages& kv);
// Make room for positions [0, n_pos): takes the missing blocks from the pool.
// All or nothing: when the pool has too few, nothing is taken and it
// returns false (a sequence is never given another's block).
bool kv_seq_grow(KVPages& kv, KVSeq& seq, int n_pos);
// Give every block back; the sequence is empty afterwards.
void kv_seq_free(KVPages& kv, KVSeq& seq);
// Keys or values of layer `layer` at position `pos`: kv_dim values of `type`.
uint8_t* kv_key(KVPages& kv, const KVSeq& seq, int layer, int pos);
uint8_t* kv_value(KVPages& kv, const KVSeq& seq, int layer, int pos);
