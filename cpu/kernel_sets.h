// cpu/kernel_sets.h — the fast kernels' side of kernels.h: the kernel sets
// (--kernels), the micro-kernels of each instruction set, and the drivers
// that run them on every core (book/12-performance.md).
//
// kernels.h is the plain API the forward pass calls; what runs behind it is
// one table of operations (kernels.h:KernelOps), filled once at start by
// kernels_init (cpu/kernel_sets.cpp) from the set asked for. This header is
// for the files that write those operations, the tests that compare them
// with the plain loops, and the commands that choose a set.
#pragma once
#include <vector>
#include "gguf/quants.h"
#include "kernels.h"

// The kernel sets (--kernels). One rule for all of them: the forward pass
// calls the operation (matmul, attention_heads, ...), which runs the table
// kernels_init filled (kernels.h:KernelOps) with
//   *_plain  the reference loops in kernels.cpp (double sums; only attention shares the threads), or
//   *_fast   the threaded driver in kernels_fast.cpp, given the micro-kernels
//            of one instruction set: the scalar twin (portable C++), AVX2,
//            AVX-512 or NEON (64-bit ARM), each in its own file.
// Every SIMD set sums in the one order of kernels_fast.cpp, so scalar, AVX2
// and AVX-512 give bitwise identical results; "fast" is the best set this
// CPU runs, chosen at run time (cpuid). One set trades exactness for speed
// and says so in its name: bf16dot rounds the activations to bf16 for bf16
// weights (AVX512_BF16's vdpbf16ps), so it is equal only to its own scalar
// twin, BF16DOT_SCALAR_KERNELS, not to the others.
//
// The one list of kernel levels is this enum and its table, KERNEL_SETS
// (cpu/kernel_sets.cpp): the float tiles, the Q8_0 tiles, attention's tiles and the
// block formats' tiles (quants_fast.cpp, quants_packed.cpp) of a set are all
// in its SimdKernels row, so --kernels avx2 runs AVX2 code everywhere, on
// any CPU that has AVX2, whatever the compiler's flags.
enum class KernelSet { Plain, Scalar, AVX2, AVX512, NEON, BF16Dot, Fast };
struct SimdKernels;
struct KernelSetInfo {
    KernelSet set;
    const char* name;  // the --kernels value
    const char* what;  // one line for --help
    // What runs: nullptr for plain and fast (which resolves to another row),
    // and for a set whose file this build does not compile (NEON on x86).
    const SimdKernels* kernels;
    bool (*cpu_has)();    // nullptr: any CPU runs it
    const char* missing;  // kernels_init's error when cpu_has() says no
    // Sums in the one order of kernels_fast.cpp: bitwise equal to the scalar
    // twin (the tests compare it so). bf16dot is not: it equals its own twin.
    bool exact;
};
extern const KernelSetInfo KERNEL_SETS[];
extern const int N_KERNEL_SETS;
// The row of `set`, and whether this build and this CPU run it.
const KernelSetInfo& kernel_set_info(KernelSet set);
bool kernel_set_runs_here(const KernelSetInfo& s);
// What "fast" runs on this build and CPU.
KernelSet fast_kernel_set();

// The micro-kernels of one instruction set (kernels_fast.cpp drives them:
// threads, tiles, the Q8_0 activations). A tile is rows x tokens dot
// products at once; out[r][t] = row r of W . token t of x (MAX_TILE:
// tensor.h).
//
// A new kernel set (say RISC-V's vector extension) provides, in a folder
// of its instruction set under cpu/ (cpu/riscv/kernels_rvv.cpp, and its
// block formats' tiles in quants_rvv.cpp if it has them, as cpu/x86/ does;
// their functions carrying their target as kernels_avx2.cpp's pragma does,
// each file inside the #if of its architecture):
//   - a `const SimdKernels` with every field below: name, the tile shapes,
//     tile, tile_q8 (or nullptr: Q8_0 then runs in the block formats'
//     driver, which needs quant_tile with quant_tile_q8), dot, axpy,
//     exp_shift; round_bf16 and tile_bf16 only for a set that rounds the
//     activations to bf16 (bf16dot); att_scores, att_pv or nullptr (the
//     scalar twin's then run); quant_tile and its shapes, or nullptr (the
//     reference quants.cpp:dot_quant_q8 then runs); packed_group and
//     packed_q8, or nullptr (then no matrix is packed for this set);
//     tile_chunk, or nullptr (then a prefill tile takes whole rows);
//     att_widen, or nullptr (then attention widens with kernels.h:widen);
//   - its extern declaration below, a KernelSet value, a row in KERNEL_SETS
//     (cpu/kernel_sets.cpp) with its cpu_has_*() test (kernels_fast.cpp: cpuid or
//     the build target), and its place in kernels_init's choice for "fast";
//   - the folder's glob in the Makefile's SRC_DIRS (cpu/x86 and cpu/arm are
//     there), its row in tools/file_map.txt.
// The tests then cover it without being told: tests/test_kernels.cpp
// (float and Q8_0 matmul, attention, att_widen, exp) and tests/test_gguf.cpp (every
// block format, file layout and packed) loop over KERNEL_SETS and compare
// each set that runs here, bit for bit, with the scalar twin, for every
// thread count and batch size; tests/check_simd_compiles.sh builds the
// files for each target.
struct SimdKernels {
    const char* name;  // "scalar", "avx2", "avx512": what bench, -v and the report print
    int tile_rows, tile_tokens;        // float weights
    int q8_tile_rows, q8_tile_tokens;  // Q8_0 weights x Q8_0 activations
    // n_tokens <= tile_tokens (the last tokens of a batch come as a smaller tile)
    void (*tile)(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols,
                 float out[MAX_TILE][MAX_TILE]);
    // nullptr (AVX-512): Q8_0 runs in the block formats' driver instead
    // (quants_fast.cpp, with this set's quant_tile: the VNNI tiles), in the
    // same order and bits (cpu/kernel_sets.cpp:goes_to_quants chooses)
    void (*tile_q8)(const uint8_t* const* w, const uint8_t* const* x, int n_tokens, int n_blocks,
                    float out[MAX_TILE][MAX_TILE]);
    // y += alpha[j] * x_j for the rows j = 0..n_rows-1 of x, `stride` bytes apart, each element
    // in order of j (one fma per row): the weighted sum of attention's value rows, a block at a time
    void (*axpy)(float* y, const float* alpha, const uint8_t* x, size_t stride, DType xt, int n_rows, int n);
    void (*exp_shift)(float* x, float m, int n);  // x[i] = exp(x[i] - m), x[i] <= m: kernels_fast.cpp's polynomial
    // bf16dot only (nullptr in the other sets): bf16 weights times
    // activations that the driver rounded to bf16 once per matmul
    // (round_bf16: f32_to_bf16_daz of each value), not once per tile, so the
    // tile loads half the bytes and converts nothing.
    void (*round_bf16)(const float* x, uint16_t* out, int n);
    void (*tile_bf16)(const uint8_t* const* w, const uint16_t* const* x, int n_tokens, int cols,
                      float out[MAX_TILE][MAX_TILE]);
    // Prefill attention's two tiles (cpu/attention_fast.cpp:attention_heads_fast);
    // nullptr where a set has none: the driver then runs the scalar twin's
    // att_scores, or axpy once per query, which give the same bits.
    // s[i][j] = q_i . k_j for nq <= ATT_QUERIES queries (q_i at q + i*q_stride)
    // and the ATT_BLOCK keys of kt, stored transposed ([head_dim][ATT_BLOCK]):
    // each score one chain of fmas in order of the dimension, from +0.
    void (*att_scores)(float* s, const float* q, size_t q_stride, int nq, const float* kt, int head_dim);
    // o_i += sum_j p[i][j] v_j for nq queries (o: [nq][head_dim], p: [nq][ATT_BLOCK])
    // over the n_rows value rows at v, `stride` bytes apart: axpy's order.
    void (*att_pv)(float* o, const float* p, int nq, const uint8_t* v, size_t stride, DType vt, int n_rows,
                   int head_dim);
    // The block formats (quants_fast.cpp drives them): out[r][k] = row w[r]
    // (as the file stores it) . token k's Q8_0 activation blocks x[k], for
    // n_rows = quant_rows (a batch) or quant_decode_rows (one token) and
    // n_tokens <= quant_tokens, in quants.cpp:dot_quant_q8's order. nullptr:
    // the reference itself, one row a tile. quant_tile_q8: it reads Q8_0
    // weights too (else Q8_0 takes the reference here; the float driver's
    // tile_q8 is the one that runs).
    void (*quant_tile)(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                       int n_blocks, float out[MAX_TILE][MAX_TILE]);
    int quant_rows, quant_decode_rows, quant_tokens;
    bool quant_tile_q8;
    // The packed layout's tile (quants.h:pack_mat; quants_packed.cpp:
    // packed_tile calls it): the PACK_ROWS rows of group g against one
    // token's activation blocks xq, from the block sums start/xsf
    // (activation_sums); out[0..15] = the 16 products + bias. nullptr: no
    // matrix is packed for this set. packed_q8: it reads Q8_0 too.
    void (*packed_group)(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
                         const float* xsf, const float* bias, float* out);
    bool packed_q8;
    // A float tile over the columns c0 .. c1-1 of its rows only, for a
    // prefill whose rows are too long for a token group's activations to
    // stay in the L1 cache (kernels_fast.cpp:run_panel cuts them in
    // chunks). `lanes` holds the 16 lanes of each dot product between
    // chunks (tile_rows x tile_tokens x LANES floats): they start from it
    // where c0 > 0 and stay in it where c1 < cols; the last chunk writes
    // out as tile does. The same FMAs in the same order as tile, so the
    // same bits. nullptr: the set's tiles take whole rows.
    void (*tile_chunk)(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols, int c0,
                       int c1, float* lanes, float out[MAX_TILE][MAX_TILE]);
    // Attention's key and value rows (f32, f16, bf16 or Q8_0; rows[j] at
    // the head's first value) widened to f32: transposed, dst[d][ATT_BLOCK]
    // with zeros for the keys j >= nb (att_scores' layout), or not,
    // dst[nb][head_dim]. Widening is exact, so every set gives the same
    // floats. nullptr: cpu/attention_fast.cpp's loop over widen.
    void (*att_widen)(float* dst, const uint8_t* const* rows, int nb, DType t, int head_dim, bool transposed);
};
// Decode (one token) does little arithmetic per weight byte: what limits it
// is how many cache lines are on their way from memory at once. For one
// token a tile holds one row of each of its stripes (kernels_fast.cpp:
// tile_row_list), so a thread reads a few long streams that the hardware
// prefetcher follows. It does not run far enough ahead on every CPU, and a
// batch of a few tokens (a serving step) spends long enough on each line
// that the next ones should already be on their way. So the x86 float
// tiles ask, as they read a line of each row, for the same columns `rows`
// rows further down (prefetch_ahead, TO_L2; rows = the tile's own row
// count): in stripes, the rows a few tiles on; in a prefill tile, whose
// rows sit side by side, the next tile's rows, which come from L3 for the
// first token group of a block. Into L2 (locality 2), not L1, where the
// lines would push out what the tile is still reading.
// (book/12-performance.md, Step 4, measures it; NEON's tiles are not
// measured with it and do without.) The AVX2 Q8_0 tile (kernels_avx2.cpp) asks
// PREFETCH_ROWS rows further down each stripe, into L1, and the block
// formats' tiles do likewise (quants_avx2.cpp:prefetch_distance). A
// prefetch never faults, past the matrix's end included, and changes no
// result.
const int PREFETCH_ROWS = 8;
enum PrefetchTo { TO_L2, TO_L1 };
// Asks for the line `ahead` bytes past p (a constant `to` folds the branch away).
static inline void prefetch_ahead(const void* p, size_t ahead, PrefetchTo to) {
    const void* line = (const void*)((uintptr_t)p + ahead);
    if (to == TO_L1) __builtin_prefetch(line, 0, 3);
    else __builtin_prefetch(line, 0, 2);
}
extern const SimdKernels SCALAR_KERNELS;
extern const SimdKernels AVX2_KERNELS;    // defined only on x86-64
extern const SimdKernels AVX512_KERNELS;  // defined only on x86-64
extern const SimdKernels NEON_KERNELS;    // defined only on 64-bit ARM
extern const SimdKernels AVX512_BF16DOT_KERNELS;  // --kernels bf16dot; defined only on x86-64
extern const SimdKernels BF16DOT_SCALAR_KERNELS;  // its scalar twin (vdpbf16ps's order in C++), for the tests
// An activation rounded to bf16 the way vcvtne2ps2bf16 does: to nearest
// even, a subnormal input to a zero of its sign.
uint16_t f32_to_bf16_daz(float x);
bool cpu_has_avx2();    // AVX2 + FMA + F16C
bool cpu_has_avx512();  // AVX-512 F, BW, VL, BF16, VNNI
bool cpu_has_neon();    // built for 64-bit ARM (every such core has NEON)

struct KernelConfig {
    KernelSet set = KernelSet::Fast;  // as asked
    const SimdKernels* simd = nullptr;  // what runs; nullptr under plain
    int threads = 0;  // 0: all cores
};
extern KernelConfig g_kernels;
// Applies threads to OpenMP, resolves "fast" to the best set this CPU runs
// and fills kernels.h's table of operations (g_ops) with the set's drivers;
// fails with a one-line error when the CPU lacks the set asked for. The
// one place a kernel set is chosen.
void kernels_init(KernelSet set, int threads);
const char* kernel_set_name(KernelSet set);
// What runs now: "plain", "scalar", "avx2", "avx512", "avx512+bf16dot", ...
const char* kernel_path_name();

void matmul_fast(const MatmulOut* outs, int n, const float* x, int T, const SimdKernels& k, KernelScratch& s);
// Which rows tile number `tile` holds: consecutive ones for a long batch,
// one from each of tile_rows stripes for a short one (kernels_fast.cpp).
int tile_row_list(int tile, int tile_rows, int n_rows, bool stripes, int rows[MAX_TILE]);
// A batch of at most this many tokens is read like one token: the weights
// stream by once, in stripes, each tile taking every token (a serving step
// of decoding sequences; a short prompt). Longer ones go in token blocks.
// Both float and block-format drivers use it (kernels_fast.cpp says why).
const int STREAM_TOKENS = 64;

// The fast twin of kernels.h's attention (cpu/attention_fast.cpp). A
// prefill's queries go in tiles, ATT_QUERIES queries of one head against
// ATT_BLOCK keys at a time with an online softmax (a running maximum and
// sum), so memory does not grow with n; a decode step's keys in chunks of
// ATT_CHUNK that all threads share, each chunk's partial softmax combined
// in order (flash decoding). Its own summation order, equal to plain within
// float rounding, the same bits in every SIMD set, for every thread count,
// and for a token whichever batch it came in. The keys are read where they
// lie (KVRows: one run or pages).
const int ATT_BLOCK = 64;
const int ATT_QUERIES = 8;
const int ATT_CHUNK = 4 * ATT_BLOCK;
void attention_heads_fast(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V,
                          DType kv_type, int n_heads, int n_kv_heads, int T, int n_first, int head_dim,
                          const SimdKernels& k, KernelScratch& s);
// The fast kernels' exp (kernels_fast.cpp): the scalar twin of every set's
// exp_shift, for x in [-87.33, 0] within 2 ulp of exp; 0 below.
float exp_poly(float x);
// SwiGLU with the set's exp_shift: equal to plain within float rounding,
// the same bits in every set.
void swiglu_fast(float* gate, const float* up, int n, const SimdKernels& k);

// The one summation order's 16 lanes (kernels_fast.cpp) and their fold and
// tree, written out; the SIMD versions add in this order.
const int LANES = 16;
static inline float sum_lanes(const float l[LANES]) {
    float u[8];
    for (int j = 0; j < 8; j++) u[j] = l[j] + l[j + 8];
    return ((u[0] + u[4]) + (u[2] + u[6])) + ((u[1] + u[5]) + (u[3] + u[7]));
}
// The block formats' fast drivers (quants_fast.cpp, quants_packed.cpp),
// with a kernel set's tiles (SimdKernels::quant_tile, packed_group).
// The integer path of every kernel set but plain: the activations rounded
// to Q8_0 blocks once per call, each block of weights multiplied by them
// in exact integers, then scaled and summed in quants.cpp:dot_quant_q8's
// order: every set, tile shape, batch size and thread count the same bits.
// Q8_0 weights fit the same scheme (codes c + 128, offset 128) and give the
// bits of kernels_fast.cpp's Q8_0 order; a set without tile_q8 (AVX-512)
// multiplies Q8_0 here (cpu/kernel_sets.cpp:goes_to_quants chooses).
void matmul_quant_fast(float* out, const float* x, const Mat& W, const float* bias, int T, const SimdKernels& k,
                       KernelScratch& s);
// Several matrices of the same width times the same x in one parallel loop
// (matmul_many), each output with the bits of matmul_quant_fast.
void matmul_quant_fast_many(const MatmulOut* outs, int n, const float* x, int T, const SimdKernels& k,
                            KernelScratch& s);
// The packed layout's driver (quants_packed.cpp), for quants_fast.cpp's:
// activation_sums makes, once per call, the sum xs_j of each 4-code word of
// every token's Q8_0 activation blocks ([T][n_blocks][8]) in the form a
// type's tile starts from, in s's buffers; packed_tile runs a packed
// matrix's tile i (rows 16i .. 16i+15) for every token.
struct BlockSums {
    const int32_t* start;  // -offset * xs_j, a lane's start where the codes have an offset (Q4_0 8, Q5_0 16, Q6_K 32, Q8_0 128)
    const float* xsf;      // -xs_j as a float, where the format has a minimum (Q4_1, Q5_1, Q4_K, Q5_K)
};
BlockSums activation_sums(DType t, const uint8_t* xq, int T, int cols, KernelScratch& s);
void packed_tile(const MatmulOut& o, int i, const uint8_t* xq, const BlockSums& xs, int T, const SimdKernels& k);
// Whether a kernel set's packed tile reads type t (AVX-512 every block
// format, AVX2 all but Q8_0, whose file-layout tile in kernels_avx2.cpp
// decodes faster; none in the others, or for nullptr). A matrix is packed
// only for a tile that reads it (model.cpp:pack_model); the others keep the
// file's layout.
bool packed_tile_reads(DType t, const SimdKernels* k);
// Every block-format matrix of m whose type the packed tile of set k reads
// laid out for it (pack_mat), once at load (generate.cpp:engine_load).
struct Model;
void pack_model(Model& m, const SimdKernels& k);
