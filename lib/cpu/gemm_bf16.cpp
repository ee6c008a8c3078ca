// The bf16 matrix product (see cpu/gemm_bf16.h).
#include "cpu/gemm_bf16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

#include "cpu/cpu_backend.h"
#include "cpu/thread_pool.h"
#include "core/math.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12's AVX-512 shuffle intrinsics start from _mm512_undefined_epi32(),
// which its flow analysis reports as read uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace snn {
namespace {

constexpr int64_t kMr = 8, kNr = 32;  // a tile of C
constexpr int64_t kRowGroup = 16;     // op(A) is packed 16 rows (two panels) at a time
constexpr int64_t kKcPairs = 192;     // pairs of k per block
constexpr int64_t kMc = 128;          // rows of C per block
constexpr int64_t kNc = 512;          // columns of C per block
// Below this many multiply-adds one thread does the work (as the float32
// products, cpu_backend.cpp).
constexpr int64_t kParallel = 512 * 1024;

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
inline int64_t pairs_of(int64_t K) { return (K + 1) / 2; }

int32_t workers_for(int64_t M, int64_t N, int64_t K) { return M * N * K >= kParallel ? cpu_threads() : 1; }

// Row r of a row-major matrix: base + r*ld, or rows[r] when given.
struct Rows {
    const float *base;
    int64_t ld;
    const float *const *rows;
    const float *operator()(int64_t r) const { return rows ? rows[r] : base + r * ld; }
};

// ---- emulated: operands rounded to bf16, the float32 product ---------------

// out[r][c] = bf16_round(op(X)[r][c]) for the R x C matrix op(X).
void round_operand(bool trans, int64_t R, int64_t C, Rows X, float *out) {
    for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) out[r * C + c] = bf16_round(trans ? X(c)[r] : X(r)[c]);
}

// A product without terms (M, N or K is 0): C is left as it is, or zeroed
// when K is 0 and the product does not accumulate. True when it was one.
bool product_is_empty(int64_t M, int64_t N, int64_t K, float *C, int64_t ldc, bool accumulate) {
    if (M == 0 || N == 0) return true;
    if (K != 0) return false;
    if (!accumulate)
        for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    return true;
}

// C (+)= a b for rounded operands a [M][K] and b [K][N]: the float32 product.
void multiply_rounded(int64_t M, int64_t N, int64_t K, const float *a, const float *b, float *C, int64_t ldc,
                      bool accumulate) {
    if (product_is_empty(M, N, K, C, ldc, accumulate)) return;
    gemm_nn(M, N, K, a, K, b, N, C, ldc, accumulate);
}

}  // namespace

size_t gemm_bf16_a_bytes(int64_t M, int64_t K) {
    const int64_t native = round_up(M, kRowGroup) * pairs_of(K) * 4, emulated = M * K * 4;
    return size_t(round_up(std::max(native, emulated), 64));
}

size_t gemm_bf16_b_bytes(int64_t K, int64_t N) {
    const int64_t native = round_up(N, kNr) * pairs_of(K) * 4, emulated = K * N * 4;
    return size_t(round_up(std::max(native, emulated), 64));
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

namespace {

#define SNN_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

// Lanes [0, n) of a 16-lane vector (n clamped to [0, 16]).
inline __mmask16 lanes(int64_t n) {
    return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// The n <= 32 floats at p (0 past n) as 16 pairs of bf16: dword t holds
// p[2t] in its low and p[2t + 1] in its high half.
SNN_BF16 __attribute__((always_inline)) inline __m512i pairs_from_row(const float *p, int64_t n) {
    const __m512 lo = _mm512_maskz_loadu_ps(lanes(n), p), hi = _mm512_maskz_loadu_ps(lanes(n - 16), p + 16);
    return __m512i(_mm512_cvtne2ps_pbh(hi, lo));
}

// 16 dwords whose dword t holds (even[t], odd[t]) as bf16: the first n of
// each 16-float row (0 past n; odd may be null: zeros).
SNN_BF16 __attribute__((always_inline)) inline __m512i pairs_from_rows(const float *even, const float *odd,
                                                                          int64_t n) {
    const __m512 e = _mm512_maskz_loadu_ps(lanes(n), even);
    const __m512 o = odd ? _mm512_maskz_loadu_ps(lanes(n), odd) : _mm512_setzero_ps();
    const __m512i both = __m512i(_mm512_cvtne2ps_pbh(o, e));  // e in words 0..15, o in 16..31
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                                22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(interleave, both);
}

// v[m] = column m of the 16 x 16 dword matrix whose row r is v[r].
SNN_BF16 void transpose16(__m512i v[16]) {
    __m512i t[16], u[16];
    for (int r = 0; r < 16; r += 2) {
        t[r] = _mm512_unpacklo_epi32(v[r], v[r + 1]);
        t[r + 1] = _mm512_unpackhi_epi32(v[r], v[r + 1]);
    }
    // u[4g + c], lane L: column 4L + c of rows 4g .. 4g + 3
    for (int g = 0; g < 4; ++g) {
        u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    for (int c = 0; c < 4; ++c) {
        const __m512i w01 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), x01 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
        const __m512i w23 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE), x23 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
        v[c] = _mm512_shuffle_i32x4(w01, x01, 0x88);
        v[4 + c] = _mm512_shuffle_i32x4(w01, x01, 0xDD);
        v[8 + c] = _mm512_shuffle_i32x4(w23, x23, 0x88);
        v[12 + c] = _mm512_shuffle_i32x4(w23, x23, 0xDD);
    }
}

// Stores the 16 dwords of pair kk: at p0 + kk*stride, or with p1 the first
// 8 there and the last 8 at p1 + kk*stride (two panels of op(A)).
SNN_BF16 __attribute__((always_inline)) inline void put_pairs(uint32_t *p0, uint32_t *p1, int64_t stride, int64_t kk,
                                                              __m512i v) {
    if (!p1) {
        _mm512_storeu_si512(p0 + kk * stride, v);
        return;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p0 + kk * stride), _mm512_castsi512_si256(v));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p1 + kk * stride), _mm512_extracti64x4_epi64(v, 1));
}

// Rows r0 .. r0+15 of a row-major matrix X [R][K] (rows past R zero) as
// pairs, transposed: for each pair kk, the 16 rows' dwords (put_pairs).
SNN_BF16 void rows_to_pair_columns(Rows X, int64_t R, int64_t K, int64_t r0, uint32_t *p0, uint32_t *p1,
                                   int64_t stride) {
    const int64_t Kp = pairs_of(K);
    for (int64_t kk0 = 0; kk0 < Kp; kk0 += 16) {
        __m512i v[16];
        for (int64_t r = 0; r < 16; ++r)
            v[r] = r0 + r < R ? pairs_from_row(X(r0 + r) + 2 * kk0, K - 2 * kk0) : _mm512_setzero_si512();
        transpose16(v);
        for (int64_t m = 0; m < 16 && kk0 + m < Kp; ++m) put_pairs(p0, p1, stride, kk0 + m, v[m]);
    }
}

// Packed op(A): panel p (rows 8p .. 8p+7) at a + p*Kp*8 dwords, pair kk of
// row r at [kk*8 + r]. Group g covers panels 2g and 2g + 1.
SNN_BF16 void pack_a_group(bool trans_a, int64_t M, int64_t K, Rows A, uint32_t *a, int64_t g) {
    const int64_t Kp = pairs_of(K), i0 = g * kRowGroup;
    uint32_t *p0 = a + (2 * g) * Kp * kMr, *p1 = p0 + Kp * kMr;
    if (!trans_a) {
        rows_to_pair_columns(A, M, K, i0, p0, p1, kMr);
        return;
    }
    for (int64_t kk = 0; kk < Kp; ++kk) {
        const float *even = A(2 * kk) + i0, *odd = 2 * kk + 1 < K ? A(2 * kk + 1) + i0 : nullptr;
        put_pairs(p0, p1, kMr, kk, pairs_from_rows(even, odd, M - i0));
    }
}

// Packed op(B): panel q (columns 32q .. 32q+31) at b + q*Kp*32 dwords, pair
// kk of column c at [kk*32 + c].
SNN_BF16 void pack_b_panel(bool trans_b, int64_t K, int64_t N, Rows B, uint32_t *b, int64_t q) {
    const int64_t Kp = pairs_of(K), j0 = q * kNr;
    uint32_t *panel = b + q * Kp * kNr;
    if (trans_b) {
        for (int64_t h = 0; h < 2; ++h) rows_to_pair_columns(B, N, K, j0 + 16 * h, panel + 16 * h, nullptr, kNr);
        return;
    }
    for (int64_t kk = 0; kk < Kp; ++kk) {
        const float *even = B(2 * kk) + j0, *odd = 2 * kk + 1 < K ? B(2 * kk + 1) + j0 : nullptr;
        for (int64_t h = 0; h < 2; ++h)
            put_pairs(panel + 16 * h, nullptr, kNr, kk,
                      pairs_from_rows(even + 16 * h, odd ? odd + 16 * h : nullptr, N - j0 - 16 * h));
    }
}

// One 8 x 32 tile over kcp pairs: acc = sum over pairs of the dot products
// of A's and B's pairs (vdpbf16ps); C = acc (first) or C += acc, for the
// mr x nr corner that exists.
SNN_BF16 void tile(int64_t kcp, const uint32_t *a, const uint32_t *b, float *C, int64_t ldc, int64_t mr, int64_t nr,
                   bool first) {
    __m512 c[kMr][2];
    for (int r = 0; r < kMr; ++r) c[r][0] = c[r][1] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < kcp; ++kk) {
        const __m512bh b0 = __m512bh(_mm512_loadu_si512(b + kk * kNr));
        const __m512bh b1 = __m512bh(_mm512_loadu_si512(b + kk * kNr + 16));
        for (int r = 0; r < kMr; ++r) {
            const __m512bh s = __m512bh(_mm512_set1_epi32(int(a[kk * kMr + r])));
            c[r][0] = _mm512_dpbf16_ps(c[r][0], s, b0);
            c[r][1] = _mm512_dpbf16_ps(c[r][1], s, b1);
        }
    }
    const __mmask16 m0 = lanes(nr), m1 = lanes(nr - 16);
    for (int64_t r = 0; r < mr; ++r) {
        float *row = C + r * ldc;
        if (!first) {
            c[r][0] = _mm512_add_ps(c[r][0], _mm512_maskz_loadu_ps(m0, row));
            c[r][1] = _mm512_add_ps(c[r][1], _mm512_maskz_loadu_ps(m1, row + 16));
        }
        _mm512_mask_storeu_ps(row, m0, c[r][0]);
        _mm512_mask_storeu_ps(row + 16, m1, c[r][1]);
    }
}

// Rows [ib, ie) and columns [jb, je) of C (ib a multiple of 8, jb of 32),
// in blocks: kKcPairs pairs of k by kNc columns of packed B, kMc rows of A.
SNN_BF16 void product_block(int64_t M, int64_t N, int64_t K, const uint32_t *a, const uint32_t *b, float *C,
                            int64_t ldc, bool accumulate, int64_t ib, int64_t ie, int64_t jb, int64_t je) {
    const int64_t Kp = pairs_of(K);
    for (int64_t jc = jb; jc < je; jc += kNc) {
        const int64_t jend = std::min(je, jc + kNc);
        for (int64_t pc = 0; pc < Kp; pc += kKcPairs) {
            const int64_t kcp = std::min(kKcPairs, Kp - pc);
            const bool first = pc == 0 && !accumulate;
            for (int64_t ic = ib; ic < ie; ic += kMc) {
                const int64_t iend = std::min(ie, ic + kMc);
                for (int64_t jr = jc; jr < jend; jr += kNr)
                    for (int64_t ir = ic; ir < iend; ir += kMr)
                        tile(kcp, a + (ir / kMr) * Kp * kMr + pc * kMr, b + (jr / kNr) * Kp * kNr + pc * kNr,
                             C + ir * ldc + jr, ldc, std::min(kMr, M - ir), std::min(kNr, N - jr), first);
            }
        }
    }
}

struct PackJob {
    bool trans;
    int64_t R, C;  // op(X) is R x C
    Rows X;
    uint32_t *out;
};

void pack_a_worker(void *ctx, int32_t w, int32_t workers) {
    const PackJob &j = *static_cast<const PackJob *>(ctx);
    int64_t b, e;
    split_range((j.R + kRowGroup - 1) / kRowGroup, workers, w, &b, &e);
    for (int64_t g = b; g < e; ++g) pack_a_group(j.trans, j.R, j.C, j.X, j.out, g);
}

// op(B) is K x N: R = K, C = N.
void pack_b_worker(void *ctx, int32_t w, int32_t workers) {
    const PackJob &j = *static_cast<const PackJob *>(ctx);
    int64_t b, e;
    split_range((j.C + kNr - 1) / kNr, workers, w, &b, &e);
    for (int64_t q = b; q < e; ++q) pack_b_panel(j.trans, j.R, j.C, j.X, j.out, q);
}

// Both operands in one job (one meeting of the threads instead of two):
// op(A)'s row groups, then op(B)'s panels, split over the workers.
struct PackBothJob {
    PackJob a, b;
};

void pack_both_worker(void *ctx, int32_t w, int32_t workers) {
    const PackBothJob &j = *static_cast<const PackBothJob *>(ctx);
    const int64_t groups = (j.a.R + kRowGroup - 1) / kRowGroup, panels = (j.b.C + kNr - 1) / kNr;
    int64_t b, e;
    split_range(groups + panels, workers, w, &b, &e);
    for (int64_t item = b; item < e; ++item)
        if (item < groups)
            pack_a_group(j.a.trans, j.a.R, j.a.C, j.a.X, j.a.out, item);
        else
            pack_b_panel(j.b.trans, j.b.R, j.b.C, j.b.X, j.b.out, item - groups);
}

struct ProductJob {
    int64_t M, N, K;
    const uint32_t *a, *b;
    float *C;
    int64_t ldc;
    bool accumulate;
};

// Each worker takes rows of C (in panels of 8) when M is the larger side,
// else columns (in panels of 32).
void product_worker(void *ctx, int32_t w, int32_t workers) {
    const ProductJob &j = *static_cast<const ProductJob *>(ctx);
    int64_t b, e;
    if (j.M >= j.N) {
        split_range((j.M + kMr - 1) / kMr, workers, w, &b, &e);
        if (b < e)
            product_block(j.M, j.N, j.K, j.a, j.b, j.C, j.ldc, j.accumulate, b * kMr, std::min(j.M, e * kMr), 0,
                          j.N);
    } else {
        split_range((j.N + kNr - 1) / kNr, workers, w, &b, &e);
        if (b < e)
            product_block(j.M, j.N, j.K, j.a, j.b, j.C, j.ldc, j.accumulate, 0, j.M, b * kNr,
                          std::min(j.N, e * kNr));
    }
}

}  // namespace

void gemm_bf16_pack_a(bool trans_a, int64_t M, int64_t K, const float *A, int64_t lda, void *packed) {
    const Rows rows{A, lda, nullptr};
    if (!cpu_has_bf16()) {
        round_operand(trans_a, M, K, rows, static_cast<float *>(packed));
        return;
    }
    PackJob job{trans_a, M, K, rows, static_cast<uint32_t *>(packed)};
    parallel_run(M * K >= kParallel / 16 ? cpu_threads() : 1, pack_a_worker, &job);
}

namespace {

// op(B) [K][N] from its rows (or, when trans, from the rows of B).
void pack_b(bool trans_b, int64_t K, int64_t N, Rows rows, void *packed) {
    if (!cpu_has_bf16()) {
        round_operand(trans_b, K, N, rows, static_cast<float *>(packed));
        return;
    }
    PackJob job{trans_b, K, N, rows, static_cast<uint32_t *>(packed)};
    parallel_run(K * N >= kParallel / 16 ? cpu_threads() : 1, pack_b_worker, &job);
}

}  // namespace

void gemm_bf16_pack_b(bool trans_b, int64_t K, int64_t N, const float *B, int64_t ldb, void *packed) {
    pack_b(trans_b, K, N, Rows{B, ldb, nullptr}, packed);
}

void gemm_bf16_pack_b_rows(bool trans_b, int64_t K, int64_t N, const float *const *rows, void *packed) {
    pack_b(trans_b, K, N, Rows{nullptr, 0, rows}, packed);
}

void gemm_bf16_packed(int64_t M, int64_t N, int64_t K, const void *a, const void *b, float *C, int64_t ldc,
                      bool accumulate) {
    if (product_is_empty(M, N, K, C, ldc, accumulate)) return;
    if (!cpu_has_bf16()) {
        gemm_nn(M, N, K, static_cast<const float *>(a), K, static_cast<const float *>(b), N, C, ldc, accumulate);
        return;
    }
    ProductJob job{M, N, K, static_cast<const uint32_t *>(a), static_cast<const uint32_t *>(b), C, ldc, accumulate};
    parallel_run(workers_for(M, N, K), product_worker, &job);
}

void gemm_bf16_native(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, void *work) {
    char *a = static_cast<char *>(work), *b = a + gemm_bf16_a_bytes(M, K);
    PackBothJob job{{trans_a, M, K, Rows{A, lda, nullptr}, reinterpret_cast<uint32_t *>(a)},
                    {trans_b, K, N, Rows{B, ldb, nullptr}, reinterpret_cast<uint32_t *>(b)}};
    parallel_run((M + N) * K >= kParallel / 16 ? cpu_threads() : 1, pack_both_worker, &job);
    gemm_bf16_packed(M, N, K, a, b, C, ldc, accumulate);
}

#else

// Without x86-64 there is no AVX-512 BF16 and cpu_has_bf16() is false: the
// emulated path alone.
void gemm_bf16_pack_a(bool trans_a, int64_t M, int64_t K, const float *A, int64_t lda, void *packed) {
    round_operand(trans_a, M, K, Rows{A, lda, nullptr}, static_cast<float *>(packed));
}

void gemm_bf16_pack_b(bool trans_b, int64_t K, int64_t N, const float *B, int64_t ldb, void *packed) {
    round_operand(trans_b, K, N, Rows{B, ldb, nullptr}, static_cast<float *>(packed));
}

void gemm_bf16_pack_b_rows(bool trans_b, int64_t K, int64_t N, const float *const *rows, void *packed) {
    round_operand(trans_b, K, N, Rows{nullptr, 0, rows}, static_cast<float *>(packed));
}

void gemm_bf16_packed(int64_t M, int64_t N, int64_t K, const void *a, const void *b, float *C, int64_t ldc,
                      bool accumulate) {
    multiply_rounded(M, N, K, static_cast<const float *>(a), static_cast<const float *>(b), C, ldc, accumulate);
}

// Never chosen (cpu_has_bf16() is false): the emulated product.
void gemm_bf16_native(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, void *work) {
    gemm_bf16_emulated(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate, work);
}

#endif

void gemm_bf16_emulated(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, void *work) {
    float *a = static_cast<float *>(work);
    float *b = reinterpret_cast<float *>(static_cast<char *>(work) + gemm_bf16_a_bytes(M, K));
    round_operand(trans_a, M, K, Rows{A, lda, nullptr}, a);
    round_operand(trans_b, K, N, Rows{B, ldb, nullptr}, b);
    multiply_rounded(M, N, K, a, b, C, ldc, accumulate);
}

}  // namespace snn
