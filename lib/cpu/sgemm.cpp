// snn's packed matrix product (see cpu/sgemm.h). Compiled with
// -ffp-contract=fast (meson.build), so each multiply-add of a micro-kernel is
// one fused multiply-add where the instruction set has it.
#include "cpu/sgemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <thread>

#include "cpu/cpu_backend.h"
#include "cpu/thread_pool.h"
#include "platform/cpu_features.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace snn {
namespace {

typedef float v4 __attribute__((vector_size(16)));
#if defined(__x86_64__)
typedef float v8 __attribute__((vector_size(32)));
typedef float v16 __attribute__((vector_size(64)));
#endif

#define SNN_INLINE __attribute__((always_inline)) inline

// *p in every lane.
SNN_INLINE v4 splat(v4 *, const float *p) {
    const v4 v = {*p};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0);
}
#if defined(__x86_64__)
SNN_INLINE v8 splat(v8 *, const float *p) {
    const v8 v = {*p};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
}
SNN_INLINE v16 splat(v16 *, const float *p) {
    const v16 v = {*p};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}
#endif

template <typename V>
SNN_INLINE V load(const float *p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <typename V>
SNN_INLINE void store(float *p, V v) {
    std::memcpy(p, &v, sizeof v);
}

// A micro-kernel's tile (MR rows, NV vectors of W floats: NR columns) and
// its blocks: mc rows of op(A) (a multiple of MR), kc depths, nc columns of
// op(B) (a multiple of NR).
template <typename Vec, int Rows, int Vectors, int64_t RowBlock, int64_t DepthBlock, int64_t ColumnBlock>
struct Shape {
    using V = Vec;
    static constexpr int W = int(sizeof(Vec) / sizeof(float));
    static constexpr int MR = Rows, NV = Vectors, NR = W * Vectors;
    static constexpr int64_t mc = RowBlock, kc = DepthBlock, nc = ColumnBlock;
    static_assert(mc % MR == 0 && nc % NR == 0, "blocks are whole micro-panels");
};

// AVX-512: 16 accumulators of 16 floats; a 64 x 256 block of A (64 KB) for
// the second-level cache, 256 x 32 panels of B (32 KB) streamed through the
// first.
#if defined(__x86_64__)
using Avx512 = Shape<v16, 8, 2, 64, 256, 512>;
// AVX2: 12 accumulators of 8 floats of 16 registers; a 72 x 256 block of A
// (72 KB), 256 x 16 panels of B (16 KB).
using Avx2 = Shape<v8, 6, 2, 72, 256, 512>;
#endif
// aarch64: 24 accumulators of 4 floats of 32 registers.
#if defined(__aarch64__)
using Neon = Shape<v4, 8, 3, 64, 256, 504>;
#endif
// 12 accumulators of 4 floats: the 16 registers of SSE2.
using Portable = Shape<v4, 6, 2, 72, 256, 512>;

template <typename S>
constexpr size_t pack_floats() {
    return size_t(S::kc * S::nc + S::mc * S::kc);
}

// Bp[(panel*kc + k)*NR + c] = op(B)[k0 + k][j0 + panel*NR + c], 0 past nc.
template <typename S>
SNN_INLINE void pack_b(bool trans_b, const float *B, int64_t ldb, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                       float *Bp) {
    using V = typename S::V;
    constexpr int64_t NR = S::NR;
    for (int64_t p = 0; p * NR < nc; ++p) {
        const int64_t cols = std::min(NR, nc - p * NR), j = j0 + p * NR;
        float *dst = Bp + p * kc * NR;
        if (!trans_b) {
            for (int64_t k = 0; k < kc; ++k) {
                const float *src = B + (k0 + k) * ldb + j;
                float *d = dst + k * NR;
                if (cols == NR) {
#pragma GCC unroll 4
                    for (int v = 0; v < S::NV; ++v) store<V>(d + v * S::W, load<V>(src + v * S::W));
                } else {
                    for (int64_t c = 0; c < cols; ++c) d[c] = src[c];
                    for (int64_t c = cols; c < NR; ++c) d[c] = 0.0f;
                }
            }
        } else {
            // A transpose, 16 depths at a time so that the rows of the
            // panel being written stay in the first-level cache.
            for (int64_t kb = 0; kb < kc; kb += 16) {
                const int64_t ke = std::min(kc, kb + 16);
                for (int64_t c = 0; c < NR; ++c) {
                    if (c >= cols) {
                        for (int64_t k = kb; k < ke; ++k) dst[k * NR + c] = 0.0f;
                        continue;
                    }
                    const float *src = B + (j + c) * ldb + k0;
                    for (int64_t k = kb; k < ke; ++k) dst[k * NR + c] = src[k];
                }
            }
        }
    }
}

// Ap[(panel*kc + k)*MR + r] = op(A)[i0 + panel*MR + r][k0 + k], 0 past mc.
template <typename S>
SNN_INLINE void pack_a(bool trans_a, const float *A, int64_t lda, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
                       float *Ap) {
    constexpr int64_t MR = S::MR;
    for (int64_t p = 0; p * MR < mc; ++p) {
        const int64_t rows = std::min(MR, mc - p * MR), i = i0 + p * MR;
        float *dst = Ap + p * kc * MR;
        if (!trans_a) {
            for (int64_t r = 0; r < MR; ++r) {
                if (r >= rows) {
                    for (int64_t k = 0; k < kc; ++k) dst[k * MR + r] = 0.0f;
                    continue;
                }
                const float *src = A + (i + r) * lda + k0;
                for (int64_t k = 0; k < kc; ++k) dst[k * MR + r] = src[k];
            }
        } else {
            for (int64_t k = 0; k < kc; ++k) {
                const float *src = A + (k0 + k) * lda + i;
                float *d = dst + k * MR;
                for (int64_t r = 0; r < rows; ++r) d[r] = src[r];
                for (int64_t r = rows; r < MR; ++r) d[r] = 0.0f;
            }
        }
    }
}

// The micro-kernel: acc[MR][NR] = Ap panel x Bp panel over kc depths, each
// row of A broadcast against NV vectors of B; then C = acc (first) or
// C += acc, for the mr x nr corner that exists.
template <typename S>
SNN_INLINE void micro_kernel(int64_t kc, const float *Ap, const float *Bp, float *C, int64_t ldc, int64_t mr,
                             int64_t nr, bool first) {
    using V = typename S::V;
    V acc[S::MR][S::NV];
#pragma GCC unroll 16
    for (int r = 0; r < S::MR; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < S::NV; ++v) acc[r][v] = V{};
    for (int64_t k = 0; k < kc; ++k) {
        V b[S::NV];
#pragma GCC unroll 4
        for (int v = 0; v < S::NV; ++v) b[v] = load<V>(Bp + k * S::NR + v * S::W);
        const float *a = Ap + k * S::MR;
#pragma GCC unroll 16
        for (int r = 0; r < S::MR; ++r) {
            const V s = splat(static_cast<V *>(nullptr), a + r);
#pragma GCC unroll 4
            for (int v = 0; v < S::NV; ++v) acc[r][v] += s * b[v];
        }
    }
    if (mr == S::MR && nr == S::NR) {
#pragma GCC unroll 16
        for (int r = 0; r < S::MR; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < S::NV; ++v) {
                float *p = C + r * ldc + v * S::W;
                store<V>(p, first ? acc[r][v] : load<V>(p) + acc[r][v]);
            }
        return;
    }
    for (int64_t r = 0; r < mr; ++r) {
        float t[S::NR];
#pragma GCC unroll 4
        for (int v = 0; v < S::NV; ++v) store<V>(t + v * S::W, acc[r][v]);
        float *row = C + r * ldc;
        for (int64_t c = 0; c < nr; ++c) row[c] = first ? t[c] : row[c] + t[c];
    }
}

struct Call {
    bool trans_a, trans_b;
    int64_t M, N, K;
    const float *A;
    int64_t lda;
    const float *B;
    int64_t ldb;
    float *C;
    int64_t ldc;
    bool accumulate;
};

// The loops around the micro-kernel: columns (nc), depths (kc), rows (mc).
template <typename S>
SNN_INLINE void blocked(const Call &g, float *pack) {
    float *Bp = pack, *Ap = pack + S::kc * S::nc;
    if (g.M == 0 || g.N == 0) return;
    if (g.K == 0) {
        if (!g.accumulate)
            for (int64_t i = 0; i < g.M; ++i) std::fill(g.C + i * g.ldc, g.C + i * g.ldc + g.N, 0.0f);
        return;
    }
    for (int64_t jc = 0; jc < g.N; jc += S::nc) {
        const int64_t nc = std::min(S::nc, g.N - jc);
        for (int64_t pc = 0; pc < g.K; pc += S::kc) {
            const int64_t kc = std::min(S::kc, g.K - pc);
            const bool first = pc == 0 && !g.accumulate;
            pack_b<S>(g.trans_b, g.B, g.ldb, pc, kc, jc, nc, Bp);
            for (int64_t ic = 0; ic < g.M; ic += S::mc) {
                const int64_t mc = std::min(S::mc, g.M - ic);
                pack_a<S>(g.trans_a, g.A, g.lda, ic, mc, pc, kc, Ap);
                for (int64_t jr = 0; jr < nc; jr += S::NR)
                    for (int64_t ir = 0; ir < mc; ir += S::MR)
                        micro_kernel<S>(kc, Ap + ir * kc, Bp + jr * kc, g.C + (ic + ir) * g.ldc + jc + jr, g.ldc,
                                        std::min<int64_t>(S::MR, mc - ir), std::min<int64_t>(S::NR, nc - jr), first);
            }
        }
    }
}

// ---- few rows of C, unpacked -------------------------------------------------

// v's lanes added into 4 (lane i: the sum of lanes i, i + 4, ...).
SNN_INLINE v4 fold4(v4 v) { return v; }
#if defined(__x86_64__)
SNN_INLINE v4 fold4(v8 v) {
    return __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
}
SNN_INLINE v4 fold4(v16 v) {
    return fold4(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
}
#endif

// Makes the compiler hold v in a register: a vector of B used by several
// rows of A is loaded once, not folded into each row's multiply-add as a
// load of its own (which made two rows take nearly twice one row's time).
// Clang checks an asm operand against the features of the function it is
// written in, not of the one it is inlined into, and refuses a 512-bit
// register here: with clang it does nothing.
template <typename V>
SNN_INLINE void in_register(V &v) {
#if defined(__clang__)
    (void)v;
#elif defined(__x86_64__)
    __asm__("" : "+v"(v));
#elif defined(__aarch64__)
    __asm__("" : "+w"(v));
#else
    (void)v;
#endif
}

// C[R][N] (+)= A[R][K] B[N][K]^T as dot products, 4 columns of C at a time
// (each row's sums in the same order whatever R, so that a row of C has the
// same bits in a product of any number of rows): vectors of W depths, then
// (below) the four columns' sums folded to 4 lanes each, the depths past the
// last full vector added in vectors of 4, the lanes transposed and added,
// and the last K % 4 depths.
template <typename S, int R>
SNN_INLINE void few_rows_nt(const Call &g) {
    using V = typename S::V;
    constexpr int W = S::W;
    const int64_t kv = g.K - g.K % W, k4 = g.K - g.K % 4;
    for (int64_t j = 0; j < g.N; j += 4) {
        const int64_t cols = std::min<int64_t>(4, g.N - j);
        const float *b[4];
        for (int c = 0; c < 4; ++c) b[c] = g.B + std::min<int64_t>(j + c, g.N - 1) * g.ldb;
        V acc[R][4];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) acc[r][c] = V{};
        for (int64_t k = 0; k < kv; k += W) {
            V bv[4];
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                bv[c] = load<V>(b[c] + k);
                in_register(bv[c]);
            }
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const V a = load<V>(g.A + r * g.lda + k);
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) acc[r][c] += a * bv[c];
            }
        }
        // The four columns' sums together: each vector folded to 4 lanes,
        // plus the depths past the last full vector in vectors of 4, then
        // the 4 x 4 lanes transposed and added into one vector of 4 sums,
        // then the last K % 4 depths. (Columns past N repeat column N - 1
        // and are not stored; a column's sum is the same wherever it falls.)
        for (int r = 0; r < R; ++r) {
            const float *a = g.A + r * g.lda;
            v4 f[4];
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                v4 sum = fold4(acc[r][c]);
                for (int64_t k = kv; k < k4; k += 4) sum += load<v4>(a + k) * load<v4>(b[c] + k);
                f[c] = sum;
            }
            const v4 t0 = __builtin_shufflevector(f[0], f[1], 0, 4, 1, 5) +
                          __builtin_shufflevector(f[0], f[1], 2, 6, 3, 7);
            const v4 t1 = __builtin_shufflevector(f[2], f[3], 0, 4, 1, 5) +
                          __builtin_shufflevector(f[2], f[3], 2, 6, 3, 7);
            v4 sums = __builtin_shufflevector(t0, t1, 0, 1, 4, 5) + __builtin_shufflevector(t0, t1, 2, 3, 6, 7);
            for (int64_t k = k4; k < g.K; ++k) sums += a[k] * v4{b[0][k], b[1][k], b[2][k], b[3][k]};
            float *out = g.C + r * g.ldc + j;
            if (cols == 4) {
                store<v4>(out, g.accumulate ? load<v4>(out) + sums : sums);
            } else {
                for (int64_t c = 0; c < cols; ++c) out[c] = g.accumulate ? out[c] + sums[c] : sums[c];
            }
        }
    }
}

// C[R][N] (+)= A[R][K] B[K][N] as sums of scaled rows of B: 4 vectors of
// columns at a time, then one vector, then single columns.
template <typename S, int R>
SNN_INLINE void few_rows_nn(const Call &g) {
    using V = typename S::V;
    constexpr int W = S::W;
    int64_t j = 0;
    for (; j + 4 * W <= g.N; j += 4 * W) {
        V acc[R][4];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v) acc[r][v] = V{};
        for (int64_t k = 0; k < g.K; ++k) {
            V b[4];
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v) b[v] = load<V>(g.B + k * g.ldb + j + v * W);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const V a = splat(static_cast<V *>(nullptr), g.A + r * g.lda + k);
#pragma GCC unroll 4
                for (int v = 0; v < 4; ++v) acc[r][v] += a * b[v];
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v) {
                float *p = g.C + r * g.ldc + j + v * W;
                store<V>(p, g.accumulate ? load<V>(p) + acc[r][v] : acc[r][v]);
            }
    }
    for (; j + W <= g.N; j += W) {
        V acc[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[r] = V{};
        for (int64_t k = 0; k < g.K; ++k) {
            const V b = load<V>(g.B + k * g.ldb + j);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) acc[r] += splat(static_cast<V *>(nullptr), g.A + r * g.lda + k) * b;
        }
        for (int r = 0; r < R; ++r) {
            float *p = g.C + r * g.ldc + j;
            store<V>(p, g.accumulate ? load<V>(p) + acc[r] : acc[r]);
        }
    }
    for (; j < g.N; ++j)
        for (int r = 0; r < R; ++r) {
            float sum = 0.0f;
            for (int64_t k = 0; k < g.K; ++k) sum += g.A[r * g.lda + k] * g.B[k * g.ldb + j];
            float &out = g.C[r * g.ldc + j];
            out = g.accumulate ? out + sum : sum;
        }
}

template <typename S>
SNN_INLINE void few_rows(const Call &g) {
    switch (g.M) {
        case 1: return g.trans_b ? few_rows_nt<S, 1>(g) : few_rows_nn<S, 1>(g);
        case 2: return g.trans_b ? few_rows_nt<S, 2>(g) : few_rows_nn<S, 2>(g);
        case 3: return g.trans_b ? few_rows_nt<S, 3>(g) : few_rows_nn<S, 3>(g);
        case 4: return g.trans_b ? few_rows_nt<S, 4>(g) : few_rows_nn<S, 4>(g);
        default: return;
    }
}
static_assert(kSgemmFewRows == 4, "few_rows has a case for each row count");

// One function per instruction set: the same code, compiled for it.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) void run_avx512(const Call &g, float *pack) { blocked<Avx512>(g, pack); }
__attribute__((target("avx512f"))) void few_avx512(const Call &g) { few_rows<Avx512>(g); }
__attribute__((target("avx2,fma"))) void run_avx2(const Call &g, float *pack) { blocked<Avx2>(g, pack); }
__attribute__((target("avx2,fma"))) void few_avx2(const Call &g) { few_rows<Avx2>(g); }
#endif
#if defined(__aarch64__)
void run_neon(const Call &g, float *pack) { blocked<Neon>(g, pack); }
void few_neon(const Call &g) { few_rows<Neon>(g); }
#endif
void run_portable(const Call &g, float *pack) { blocked<Portable>(g, pack); }
void few_portable(const Call &g) { few_rows<Portable>(g); }

bool always(const CpuFeatures &) { return true; }
bool never(const CpuFeatures &) { return false; }
#if defined(__x86_64__)
bool has_avx512(const CpuFeatures &f) { return f.avx512f; }
bool has_avx2_fma(const CpuFeatures &f) { return f.avx2_fma; }
#endif
#if defined(__aarch64__)
bool has_neon(const CpuFeatures &f) { return f.neon; }
#endif

struct SgemmKernelRow {
    SgemmKernel kernel;
    const char *name;
    bool (*eligible)(const CpuFeatures &f);
    void (*run)(const Call &g, float *pack);
    void (*few_rows)(const Call &g);
    size_t pack_floats;
};

// Scanned in order; the first eligible row is the processor's kernel.
constexpr SgemmKernelRow kSgemmKernels[] = {
#if defined(__x86_64__)
    {SgemmKernel::avx512, "avx512", has_avx512, run_avx512, few_avx512, pack_floats<Avx512>()},
    {SgemmKernel::avx2, "avx2", has_avx2_fma, run_avx2, few_avx2, pack_floats<Avx2>()},
#else
    {SgemmKernel::avx512, "avx512", never, run_portable, few_portable, 0},
    {SgemmKernel::avx2, "avx2", never, run_portable, few_portable, 0},
#endif
#if defined(__aarch64__)
    {SgemmKernel::neon, "neon", has_neon, run_neon, few_neon, pack_floats<Neon>()},
#else
    {SgemmKernel::neon, "neon", never, run_portable, few_portable, 0},
#endif
    {SgemmKernel::portable, "portable", always, run_portable, few_portable, pack_floats<Portable>()},
};

constexpr bool rows_in_enum_order() {
    for (size_t i = 0; i < sizeof(kSgemmKernels) / sizeof(kSgemmKernels[0]); ++i)
        if (size_t(kSgemmKernels[i].kernel) != i) return false;
    return true;
}
static_assert(rows_in_enum_order(), "kSgemmKernels lists SgemmKernel in its order");

constexpr size_t max_pack_floats() {
    size_t n = 0;
    for (const SgemmKernelRow &row : kSgemmKernels) n = std::max(n, row.pack_floats);
    return n;
}

// C (+)= op(A) op(B) in plain loops: where the packing space could not be had.
void plain_loops(const Call &g) {
    for (int64_t i = 0; i < g.M; ++i)
        for (int64_t j = 0; j < g.N; ++j) {
            float sum = 0.0f;
            for (int64_t k = 0; k < g.K; ++k)
                sum += (g.trans_a ? g.A[k * g.lda + i] : g.A[i * g.lda + k]) *
                       (g.trans_b ? g.B[j * g.ldb + k] : g.B[k * g.ldb + j]);
            float &c = g.C[i * g.ldc + j];
            c = g.accumulate ? c + sum : sum;
        }
}

// A thread's packing space: max_pack_floats() floats on a 64-byte boundary,
// allocated on first use, freed when the thread ends.
class ThreadPack {
   public:
    ~ThreadPack() { delete[] memory_; }
    float *get() {
        if (memory_ == nullptr) {
            memory_ = new (std::nothrow) float[max_pack_floats() + 16];
            if (memory_ == nullptr) return nullptr;
        }
        const uintptr_t at = reinterpret_cast<uintptr_t>(memory_);
        return memory_ + (((64 - at % 64) % 64) / sizeof(float));
    }

   private:
    float *memory_ = nullptr;
};
thread_local ThreadPack t_pack;

// Each share takes its thread's packing space, then waits until every share
// has begun: a thread inside a share claims no other, so the shares run on
// distinct threads, the caller and workers - 1 pool threads.
struct Reservation {
    std::atomic<int32_t> begun{0};
};
void reserve_share(void *ctx, int32_t, int32_t workers) {
    Reservation &r = *static_cast<Reservation *>(ctx);
    t_pack.get();
    r.begun.fetch_add(1, std::memory_order_acq_rel);
    while (r.begun.load(std::memory_order_acquire) < workers) std::this_thread::yield();
}

}  // namespace

SgemmKernel sgemm_kernel() { return sgemm_kernel_for(cpu_kernel_features()); }

SgemmKernel sgemm_kernel_for(const CpuFeatures &f) {
    for (const SgemmKernelRow &row : kSgemmKernels)
        if (row.eligible(f)) return row.kernel;
    return SgemmKernel::portable;
}

bool sgemm_kernel_supported(SgemmKernel k) { return kSgemmKernels[size_t(k)].eligible(cpu_features()); }

const char *sgemm_kernel_name(SgemmKernel k) { return kSgemmKernels[size_t(k)].name; }

size_t sgemm_pack_floats() { return max_pack_floats(); }

void sgemm_with(SgemmKernel k, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A,
                int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, float *pack) {
    kSgemmKernels[size_t(k)].run(Call{trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate}, pack);
}

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
           const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    const Call g{trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate};
    float *pack = t_pack.get();
    if (pack == nullptr) return plain_loops(g);
    kSgemmKernels[size_t(sgemm_kernel())].run(g, pack);
}

void sgemm_few_rows(SgemmKernel k, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    kSgemmKernels[size_t(k)].few_rows(
        Call{/*trans_a=*/false, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate});
}

void sgemm_reserve_threads(int32_t threads) {
    Reservation r;
    parallel_run(threads, reserve_share, &r);
}

}  // namespace snn
