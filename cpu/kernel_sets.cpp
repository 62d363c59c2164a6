// cpu/kernel_sets.cpp — the kernel sets (--kernels) and the one place one is
// chosen: kernels_init fills kernels.h's table of operations, g_ops, with
// the set's drivers, once at start. After that the forward pass calls
// matmul, swiglu and attention_heads without asking what runs them.
#include "cpu/kernel_sets.h"
#include <algorithm>
#include <omp.h>
#include "logging.h"

KernelConfig g_kernels;

// The SIMD files define their tables only for their own architecture.
#if defined(__x86_64__)
#define ON_X86(k) &k
#else
#define ON_X86(k) nullptr
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#define ON_ARM(k) &k
#else
#define ON_ARM(k) nullptr
#endif

const KernelSetInfo KERNEL_SETS[] = {
    {KernelSet::Fast, "fast", "the best SIMD set this CPU runs (default)", nullptr, nullptr, nullptr, true},
    {KernelSet::Plain, "plain", "the reference loops (kernels.cpp): double sums; only attention shares the threads", nullptr,
     nullptr, nullptr, false},
    {KernelSet::Scalar, "scalar", "the SIMD order in portable C++ (bitwise equal to avx2/avx512)", &SCALAR_KERNELS,
     nullptr, nullptr, true},
    {KernelSet::AVX2, "avx2", "AVX2 + FMA + F16C micro-kernels", ON_X86(AVX2_KERNELS), cpu_has_avx2,
     "this CPU lacks AVX2, FMA or F16C (try fast or scalar)", true},
    {KernelSet::AVX512, "avx512", "AVX-512 (F, BW, VL, BF16, VNNI) micro-kernels", ON_X86(AVX512_KERNELS),
     cpu_has_avx512, "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI (try fast, avx2 or scalar)", true},
    {KernelSet::NEON, "neon", "ARM NEON micro-kernels (vdotq_s32 for Q8_0 where built for dotprod)",
     ON_ARM(NEON_KERNELS), cpu_has_neon, "this build is not for 64-bit ARM (try fast or scalar)", true},
    {KernelSet::BF16Dot, "bf16dot", "avx512, but bf16 weights meet activations rounded to bf16 (vdpbf16ps): faster prefill, less exact",
     ON_X86(AVX512_BF16DOT_KERNELS), cpu_has_avx512, "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI (try fast)", false},
};
const int N_KERNEL_SETS = sizeof(KERNEL_SETS) / sizeof(KERNEL_SETS[0]);

const KernelSetInfo& kernel_set_info(KernelSet set) {
    for (int i = 0; i < N_KERNEL_SETS; i++)
        if (KERNEL_SETS[i].set == set) return KERNEL_SETS[i];
    fail("kernel set %d is not in KERNEL_SETS", (int)set);
}

bool kernel_set_runs_here(const KernelSetInfo& s) { return s.kernels && (!s.cpu_has || s.cpu_has()); }

const char* kernel_set_name(KernelSet set) {
    for (int i = 0; i < N_KERNEL_SETS; i++)
        if (KERNEL_SETS[i].set == set) return KERNEL_SETS[i].name;
    return "?";
}

// ---------------------------------------------------------------------------
// The operations of a SIMD set: its micro-kernels (g_kernels.simd) in the
// threaded drivers.

// Which driver multiplies W: GGUF's 4/5/6-bit formats and packed matrices
// go to the block formats' driver (quants_fast.cpp); so does Q8_0 when the
// set has no Q8_0 tile of its own (AVX-512: the VNNI tiles, the same order
// and bits as kernels_fast.cpp's). Everything else to kernels_fast.cpp.
static bool goes_to_quants(const Mat& W, const SimdKernels& k) {
    return dtype_is_low_bit(W.dtype) || (W.dtype == DType::Q8_0 && !k.tile_q8) || W.packed;
}

// One parallel loop for the whole list when one driver takes every matrix;
// a list that mixes drivers goes one product after another.
static void matmul_simd(const MatmulOut* outs, int n, const float* x, int T, KernelScratch& s) {
    const SimdKernels& k = *g_kernels.simd;
    int quant = 0;
    for (int i = 0; i < n; i++) quant += goes_to_quants(*outs[i].W, k);
    if (quant == n) return matmul_quant_fast_many(outs, n, x, T, k, s);
    if (quant == 0) return matmul_fast(outs, n, x, T, k, s);
    for (int i = 0; i < n; i++) matmul_simd(&outs[i], 1, x, T, s);
}

// Every value on its own, so the threads (over chunks of a prefill's
// T x intermediate values; a decode step's are too few to share) change no bit.
static void swiglu_simd(float* gate, const float* up, int n) {
    const int chunk = 4096;
    #pragma omp parallel for schedule(static) if (n > 2 * chunk)
    for (int i = 0; i < n; i += chunk) swiglu_fast(gate + i, up + i, std::min(chunk, n - i), *g_kernels.simd);
}

static void attention_simd(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V,
                           DType kv_type, int n_heads, int n_kv_heads, int T, int n_first, int head_dim,
                           KernelScratch& s) {
    attention_heads_fast(out, scores, q, K, V, kv_type, n_heads, n_kv_heads, T, n_first, head_dim, *g_kernels.simd,
                         s);
}

// "fast": the first of NEON, AVX-512, AVX2 that this build and CPU run,
// else the scalar twin.
KernelSet fast_kernel_set() {
    for (KernelSet best : {KernelSet::NEON, KernelSet::AVX512, KernelSet::AVX2})
        if (kernel_set_runs_here(kernel_set_info(best))) return best;
    return KernelSet::Scalar;
}

// The dispatch rule: a kernel set is a table of micro-kernels, picked here
// once.
void kernels_init(KernelSet set, int threads) {
    g_kernels.set = set;
    g_kernels.threads = threads > 0 ? threads : omp_get_num_procs();
    omp_set_num_threads(g_kernels.threads);
    const KernelSetInfo& asked = kernel_set_info(set);
    if (asked.cpu_has && !asked.cpu_has()) fail("--kernels %s: %s", asked.name, asked.missing);
    if (set == KernelSet::Fast) set = fast_kernel_set();
    const KernelSetInfo& runs = kernel_set_info(set);
    g_kernels.simd = set == KernelSet::Plain ? nullptr : runs.kernels ? runs.kernels : &SCALAR_KERNELS;
    g_ops = g_kernels.simd ? KernelOps{g_kernels.simd->name, matmul_simd, swiglu_simd, attention_simd} : PLAIN_OPS;
    LOGD(CAT_LOAD, "kernels: %s (--kernels %s), %d threads", kernel_path_name(), kernel_set_name(g_kernels.set),
         g_kernels.threads);
}
