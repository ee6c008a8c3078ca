// AVX-512 matrix products (see cpu/gemm512.h). Compiled with
// -ffp-contract=fast (meson.build), so each multiply-add is one FMA.
#include "cpu/gemm512.h"

#ifdef SNN_HAVE_OPENBLAS
#include <cblas.h>
#endif

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "cpu/cpu_backend.h"
#include "cpu/kernel_choice.h"
#include "cpu/sgemm.h"
#include "platform/cpu_features.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace snn {

constexpr int64_t kMr = 8;  // rows of gemm512_nn_direct's widest tiles

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

namespace {

#define SNN_AVX512 __attribute__((target("avx512f")))

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

bool gemm512_available() { return cpu_kernel_features().avx512f && !cpu_reference_kernels(); }

void gemm512_nn_direct(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                       float *C, int64_t ldc, bool accumulate) {
    gemm512_nn_direct_impl(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

#else

// Without x86-64 there is no AVX-512: never available, and the direct
// product is the packed one.
bool gemm512_available() { return false; }

void gemm512_nn_direct(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                       float *C, int64_t ldc, bool accumulate) {
    sgemm(/*trans_a=*/false, /*trans_b=*/false, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

#endif

#ifdef SNN_HAVE_OPENBLAS
// Where OpenBLAS runs AVX-512 kernels its products are as fast: the
// convolutions keep them, and take snn's AVX-512 product on processors with
// AVX-512 whose OpenBLAS runs older kernels.
bool gemm512_preferred() {
    static const bool avx512_without_openblas = [] {
        if (!cpu_features().avx512f) return false;
        const char *core = openblas_get_corename();
        if (core == nullptr) return false;
        std::string name(core);
        for (char &c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
        // OpenBLAS's own AVX-512 kernels are these cores'.
        for (const char *own : {"skylakex", "cooperlake", "sapphirerapids", "zen4", "zen5"})
            if (name.find(own) != std::string::npos) return false;
        return true;
    }();
    const bool avx512 = cpu_kernel_features().avx512f;
    return avx512 && (avx512_without_openblas || cpu_gemm512_forced()) && !cpu_reference_kernels();
}
#else
// Without OpenBLAS the packed product is snn's on every processor.
bool gemm512_preferred() { return !cpu_reference_kernels(); }
#endif

size_t gemm512_pack_floats() { return sgemm_pack_floats(); }

void gemm512(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, float *pack) {
    sgemm_with(sgemm_kernel(), trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate, pack);
}

}  // namespace snn
