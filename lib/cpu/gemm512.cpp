// AVX-512 matrix product (see cpu/gemm512.h). Compiled with
// -ffp-contract=fast (meson.build), so each multiply-add is one FMA.
#include "cpu/gemm512.h"

#include <cblas.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "cpu/cpu_backend.h"
#include "cpu/kernel_choice.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace snn {

constexpr int64_t kGemmKc = 256;  // depth of a packed block
constexpr int64_t kGemmNc = 512;  // columns of a packed block of op(B)
constexpr int64_t kGemmMc = 64;   // rows of a packed block of op(A)
constexpr int64_t kMr = 8, kNr = 32;

size_t gemm512_pack_floats() { return size_t(kGemmKc * kGemmNc + kGemmMc * kGemmKc); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

namespace {

typedef float v16 __attribute__((vector_size(64)));

#define SNN_AVX512 __attribute__((target("avx512f")))

SNN_AVX512 __attribute__((always_inline)) inline v16 load16(const float *p) {
    v16 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
SNN_AVX512 __attribute__((always_inline)) inline void store16(float *p, v16 v) { std::memcpy(p, &v, sizeof v); }
SNN_AVX512 __attribute__((always_inline)) inline v16 bcast16(const float *p) {
    const v16 v = {*p};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}

// Bp[(panel*kc + k)*32 + c] = op(B)[k0 + k][j0 + panel*32 + c], 0 past nc.
SNN_AVX512 void pack_b(bool trans_b, const float *B, int64_t ldb, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                       float *Bp) {
    for (int64_t p = 0; p * kNr < nc; ++p) {
        const int64_t cols = std::min(kNr, nc - p * kNr), j = j0 + p * kNr;
        float *dst = Bp + p * kc * kNr;
        if (!trans_b) {
            for (int64_t k = 0; k < kc; ++k) {
                const float *src = B + (k0 + k) * ldb + j;
                float *d = dst + k * kNr;
                if (cols == kNr) {
                    store16(d, load16(src));
                    store16(d + 16, load16(src + 16));
                } else {
                    for (int64_t c = 0; c < cols; ++c) d[c] = src[c];
                    for (int64_t c = cols; c < kNr; ++c) d[c] = 0.0f;
                }
            }
        } else {
            // A transpose, 16 values of k at a time so that the 16 rows of
            // the panel being written stay in the first-level cache.
            for (int64_t kb = 0; kb < kc; kb += 16) {
                const int64_t ke = std::min(kc, kb + 16);
                for (int64_t c = 0; c < kNr; ++c) {
                    if (c >= cols) {
                        for (int64_t k = kb; k < ke; ++k) dst[k * kNr + c] = 0.0f;
                        continue;
                    }
                    const float *src = B + (j + c) * ldb + k0;
                    for (int64_t k = kb; k < ke; ++k) dst[k * kNr + c] = src[k];
                }
            }
        }
    }
}

// Ap[(panel*kc + k)*8 + r] = op(A)[i0 + panel*8 + r][k0 + k], 0 past mc.
SNN_AVX512 void pack_a(bool trans_a, const float *A, int64_t lda, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
                       float *Ap) {
    for (int64_t p = 0; p * kMr < mc; ++p) {
        const int64_t rows = std::min(kMr, mc - p * kMr), i = i0 + p * kMr;
        float *dst = Ap + p * kc * kMr;
        if (!trans_a) {
            for (int64_t r = 0; r < kMr; ++r) {
                if (r >= rows) {
                    for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = 0.0f;
                    continue;
                }
                const float *src = A + (i + r) * lda + k0;
                for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = src[k];
            }
        } else {
            for (int64_t k = 0; k < kc; ++k) {
                const float *src = A + (k0 + k) * lda + i;
                float *d = dst + k * kMr;
                for (int64_t r = 0; r < rows; ++r) d[r] = src[r];
                for (int64_t r = rows; r < kMr; ++r) d[r] = 0.0f;
            }
        }
    }
}

// One 8 x 32 tile: acc = Ap panel x Bp panel over kc; C = acc (first) or
// C += acc, for the mr x nr corner that exists.
SNN_AVX512 void tile(int64_t kc, const float *Ap, const float *Bp, float *C, int64_t ldc, int64_t mr, int64_t nr,
                     bool first) {
    v16 c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {}, c30 = {}, c31 = {};
    v16 c40 = {}, c41 = {}, c50 = {}, c51 = {}, c60 = {}, c61 = {}, c70 = {}, c71 = {};
    for (int64_t k = 0; k < kc; ++k) {
        const v16 b0 = load16(Bp + k * kNr), b1 = load16(Bp + k * kNr + 16);
        const float *a = Ap + k * kMr;
        v16 s = bcast16(a + 0);
        c00 += s * b0;
        c01 += s * b1;
        s = bcast16(a + 1);
        c10 += s * b0;
        c11 += s * b1;
        s = bcast16(a + 2);
        c20 += s * b0;
        c21 += s * b1;
        s = bcast16(a + 3);
        c30 += s * b0;
        c31 += s * b1;
        s = bcast16(a + 4);
        c40 += s * b0;
        c41 += s * b1;
        s = bcast16(a + 5);
        c50 += s * b0;
        c51 += s * b1;
        s = bcast16(a + 6);
        c60 += s * b0;
        c61 += s * b1;
        s = bcast16(a + 7);
        c70 += s * b0;
        c71 += s * b1;
    }
    const v16 acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                             {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
    for (int64_t r = 0; r < mr; ++r) {
        float *row = C + r * ldc;
        if (nr == kNr) {
            store16(row, first ? acc[r][0] : load16(row) + acc[r][0]);
            store16(row + 16, first ? acc[r][1] : load16(row + 16) + acc[r][1]);
        } else {
            float t[kNr];
            store16(t, acc[r][0]);
            store16(t + 16, acc[r][1]);
            for (int64_t c = 0; c < nr; ++c) row[c] = first ? t[c] : row[c] + t[c];
        }
    }
}

SNN_AVX512 void gemm512_impl(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A,
                             int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate,
                             float *pack) {
    float *Bp = pack, *Ap = pack + kGemmKc * kGemmNc;
    if (K == 0) {
        if (!accumulate)
            for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
        return;
    }
    for (int64_t jc = 0; jc < N; jc += kGemmNc) {
        const int64_t nc = std::min(kGemmNc, N - jc);
        for (int64_t pc = 0; pc < K; pc += kGemmKc) {
            const int64_t kc = std::min(kGemmKc, K - pc);
            const bool first = pc == 0 && !accumulate;
            pack_b(trans_b, B, ldb, pc, kc, jc, nc, Bp);
            for (int64_t ic = 0; ic < M; ic += kGemmMc) {
                const int64_t mc = std::min(kGemmMc, M - ic);
                pack_a(trans_a, A, lda, ic, mc, pc, kc, Ap);
                for (int64_t jr = 0; jr < nc; jr += kNr)
                    for (int64_t ir = 0; ir < mc; ir += kMr)
                        tile(kc, Ap + ir * kc, Bp + jr * kc, C + (ic + ir) * ldc + jc + jr, ldc,
                             std::min(kMr, mc - ir), std::min(kNr, nc - jr), first);
            }
        }
    }
}

// Lanes [0, n) of a 16-float vector (n clamped to [0, 16]).
inline __mmask16 lanes(int64_t n) {
    return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// One tile of gemm512_nn_direct: MR rows of C, of which the first mr are
// stored (the others repeat A's row mr - 1), and NV vectors of 16 columns,
// of which the first nr columns exist (all when FULL: unmasked loads).
template <int MR, int NV, bool FULL>
SNN_AVX512 __attribute__((always_inline)) inline void direct_tile(int64_t K, const float *A, int64_t lda,
                                                                  const float *B, int64_t ldb, float *C, int64_t ldc,
                                                                  int64_t mr, int64_t nr, bool accumulate) {
    __mmask16 m[NV];
    for (int v = 0; v < NV; ++v) m[v] = lanes(nr - 16 * v);
    const float *a[MR];
    for (int r = 0; r < MR; ++r) a[r] = A + std::min<int64_t>(r, mr - 1) * lda;
    __m512 c[MR][NV];
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) c[r][v] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
        __m512 b[NV];
        for (int v = 0; v < NV; ++v)
            b[v] = FULL ? _mm512_loadu_ps(B + k * ldb + 16 * v) : _mm512_maskz_loadu_ps(m[v], B + k * ldb + 16 * v);
        for (int r = 0; r < MR; ++r) {
            const __m512 s = _mm512_set1_ps(a[r][k]);
            for (int v = 0; v < NV; ++v) c[r][v] = _mm512_fmadd_ps(s, b[v], c[r][v]);
        }
    }
    for (int r = 0; r < MR && r < mr; ++r)
        for (int v = 0; v < NV; ++v) {
            float *p = C + r * ldc + 16 * v;
            _mm512_mask_storeu_ps(p, m[v], accumulate ? _mm512_add_ps(c[r][v], _mm512_maskz_loadu_ps(m[v], p)) : c[r][v]);
        }
}

// mr (<= MR) rows of C: full tiles of NV vectors, then one masked tile of
// as few vectors as the last columns need.
template <int MR, int NV>
SNN_AVX512 void direct_rows(int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                            int64_t ldc, int64_t mr, bool accumulate) {
    constexpr int64_t W = 16 * NV;
    int64_t j = 0;
    for (; N - j >= W; j += W) direct_tile<MR, NV, true>(K, A, lda, B + j, ldb, C + j, ldc, mr, W, accumulate);
    const int64_t r = N - j;
    if (r > 48)
        direct_tile<MR, 4, false>(K, A, lda, B + j, ldb, C + j, ldc, mr, r, accumulate);
    else if (r > 32)
        direct_tile<MR, 3, false>(K, A, lda, B + j, ldb, C + j, ldc, mr, r, accumulate);
    else if (r > 16)
        direct_tile<MR, 2, false>(K, A, lda, B + j, ldb, C + j, ldc, mr, r, accumulate);
    else if (r > 0)
        direct_tile<MR, 1, false>(K, A, lda, B + j, ldb, C + j, ldc, mr, r, accumulate);
}

// Blocks of 8 rows as 8 x 32 tiles; a last block of 3 or 4 rows as 4 x 64
// tiles, of 1 or 2 rows as 2 x 64 (wider tiles keep enough independent sums
// in flight when there are few rows).
SNN_AVX512 void gemm512_nn_direct_impl(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                                       int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    for (int64_t i = 0; i < M; i += kMr) {
        const int64_t mr = std::min(kMr, M - i);
        const float *a = A + i * lda;
        float *c = C + i * ldc;
        if (mr > 4)
            direct_rows<8, 2>(N, K, a, lda, B, ldb, c, ldc, mr, accumulate);
        else if (mr > 2)
            direct_rows<4, 4>(N, K, a, lda, B, ldb, c, ldc, mr, accumulate);
        else
            direct_rows<2, 4>(N, K, a, lda, B, ldb, c, ldc, mr, accumulate);
    }
}

}  // namespace

bool gemm512_available() { return __builtin_cpu_supports("avx512f") && !cpu_reference_kernels(); }

void gemm512_nn_direct(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                       float *C, int64_t ldc, bool accumulate) {
    gemm512_nn_direct_impl(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

bool gemm512_preferred() {
    static const bool avx512_without_openblas = [] {
        if (!__builtin_cpu_supports("avx512f")) return false;
        const char *core = openblas_get_corename();
        if (core == nullptr) return false;
        std::string name(core);
        for (char &c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
        // OpenBLAS's own AVX-512 kernels are these cores'.
        for (const char *own : {"skylakex", "cooperlake", "sapphirerapids", "zen4", "zen5"})
            if (name.find(own) != std::string::npos) return false;
        return true;
    }();
    const bool forced = cpu_gemm512_forced() && __builtin_cpu_supports("avx512f");
    return (avx512_without_openblas || forced) && !cpu_reference_kernels();
}

void gemm512(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, float *pack) {
    gemm512_impl(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate, pack);
}

#else

// Without x86-64 there is no AVX-512: never available nor preferred, and the
// products are OpenBLAS's.
bool gemm512_preferred() { return false; }
bool gemm512_available() { return false; }

void gemm512_nn_direct(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                       float *C, int64_t ldc, bool accumulate) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(M), int(N), int(K), 1.0f, A, int(lda), B, int(ldb),
                accumulate ? 1.0f : 0.0f, C, int(ldc));
}

void gemm512(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, float *) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, int(M),
                int(N), int(K), 1.0f, A, int(lda), B, int(ldb), accumulate ? 1.0f : 0.0f, C, int(ldc));
}

#endif

}  // namespace snn
