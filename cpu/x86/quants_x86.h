// quants_x86.h — the block formats' tiles of the two x86 kernel sets, as
// their tables (kernels_avx2.cpp, kernels_avx512.cpp) take them: the
// functions live in quants_avx2.cpp and quants_avx512.cpp, which say how
// each tile is laid out; the shapes are here because a table is built from
// constants.
#pragma once
#include "tensor.h"

// AVX-512: 4 rows x 4 tokens a prefill tile, 8 rows for one token.
constexpr int A5_ROWS = 4, A5_TOKENS = 4, A5_DECODE_ROWS = 8;
void quant_tile_avx512(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                       int n_blocks, float out[MAX_TILE][MAX_TILE]);
void packed_group_avx512(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
                         const float* xsf, const float* bias, float* out);

// AVX2: 2 rows x 2 tokens, 4 rows for one token (16 registers: 8 rows
// would need them all for the accumulators).
constexpr int A2_ROWS = 2, A2_TOKENS = 2, A2_DECODE_ROWS = 4;
void quant_tile_avx2(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                     int n_blocks, float out[MAX_TILE][MAX_TILE]);
void packed_group_avx2(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
                       const float* xsf, const float* bias, float* out);
