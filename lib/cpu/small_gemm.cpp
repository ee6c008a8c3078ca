// Small matrix products in plain loops, for layers where OpenBLAS's call
// overhead would dominate. Each function is compiled twice (AVX2 and the
// x86-64 baseline) and the loader picks the one the processor runs.
#include "cpu/cpu_backend.h"
#include "cpu/multiversion.h"

namespace snn {

// C[i][j] = sum_k A[i][k] B[j][k]: dot products of contiguous rows, eight
// partial sums so they stay in one vector register.
SNN_MULTIVERSION
void small_gemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    for (int64_t i = 0; i < M; ++i) {
        const float *a = A + i * lda;
        for (int64_t j = 0; j < N; ++j) {
            const float *b = B + j * ldb;
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int64_t k = 0;
            for (; k + 8 <= K; k += 8)
                for (int u = 0; u < 8; ++u) acc[u] += a[k + u] * b[k + u];
            float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            for (; k < K; ++k) sum += a[k] * b[k];
            C[i * ldc + j] = accumulate ? C[i * ldc + j] + sum : sum;
        }
    }
}

namespace {

// Row i of C as a combination of the K rows of B, with the row held in
// registers: N is a compile-time width (1..64), so the inner loops unroll
// fully. A's element for (i, k) is A[i*ai + k*ak], which covers A and A^T.
template <int N>
__attribute__((always_inline)) inline void rows_fixed(int64_t M, int64_t K, const float *A, int64_t ai, int64_t ak,
                       const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    for (int64_t i = 0; i < M; ++i) {
        float acc[N];
        float *c = C + i * ldc;
        for (int j = 0; j < N; ++j) acc[j] = accumulate ? c[j] : 0.0f;
        const float *a = A + i * ai;
        for (int64_t k = 0; k < K; ++k) {
            const float s = a[k * ak];
            const float *b = B + k * ldb;
            for (int j = 0; j < N; ++j) acc[j] += s * b[j];
        }
        for (int j = 0; j < N; ++j) c[j] = acc[j];
    }
}

// The same for any N, in column blocks of 16 (the last one narrower).
__attribute__((always_inline)) inline void rows_any(int64_t M, int64_t N, int64_t K, const float *A, int64_t ai, int64_t ak,
                     const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    int64_t j0 = 0;
    for (; j0 + 16 <= N; j0 += 16) rows_fixed<16>(M, K, A, ai, ak, B + j0, ldb, C + j0, ldc, accumulate);
    for (; j0 + 4 <= N; j0 += 4) rows_fixed<4>(M, K, A, ai, ak, B + j0, ldb, C + j0, ldc, accumulate);
    for (; j0 < N; ++j0) rows_fixed<1>(M, K, A, ai, ak, B + j0, ldb, C + j0, ldc, accumulate);
}

__attribute__((always_inline)) inline void rows(int64_t M, int64_t N, int64_t K, const float *A, int64_t ai, int64_t ak,
                 const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    switch (N) {
        case 1: rows_fixed<1>(M, K, A, ai, ak, B, ldb, C, ldc, accumulate); break;
        case 2: rows_fixed<2>(M, K, A, ai, ak, B, ldb, C, ldc, accumulate); break;
        case 4: rows_fixed<4>(M, K, A, ai, ak, B, ldb, C, ldc, accumulate); break;
        case 8: rows_fixed<8>(M, K, A, ai, ak, B, ldb, C, ldc, accumulate); break;
        case 10: rows_fixed<10>(M, K, A, ai, ak, B, ldb, C, ldc, accumulate); break;
        case 16: rows_fixed<16>(M, K, A, ai, ak, B, ldb, C, ldc, accumulate); break;
        case 32: rows_fixed<32>(M, K, A, ai, ak, B, ldb, C, ldc, accumulate); break;
        case 64: rows_fixed<64>(M, K, A, ai, ak, B, ldb, C, ldc, accumulate); break;
        default: rows_any(M, N, K, A, ai, ak, B, ldb, C, ldc, accumulate); break;
    }
}

}  // namespace

// C[i][:] (+)= sum_k A[k][i] B[k][:]
SNN_MULTIVERSION
void small_gemm_tn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    rows(M, N, K, A, 1, lda, B, ldb, C, ldc, accumulate);
}

// C[i][:] (+)= sum_k A[i][k] B[k][:]
SNN_MULTIVERSION
void small_gemm_nn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    rows(M, N, K, A, lda, 1, B, ldb, C, ldc, accumulate);
}

// In 16 x 16 blocks. Column by column, each store lands N floats after the
// last; with N a power of two the stores of a column share a few cache sets
// and evict one another (a 64 x 128 transpose took as long as the product).
void small_transpose(int64_t N, int64_t K, const float *src, int64_t ld, float *dst) {
    constexpr int64_t kBlock = 16;
    for (int64_t j0 = 0; j0 < N; j0 += kBlock)
        for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
            const int64_t j1 = j0 + kBlock < N ? j0 + kBlock : N, k1 = k0 + kBlock < K ? k0 + kBlock : K;
            for (int64_t k = k0; k < k1; ++k)
                for (int64_t j = j0; j < j1; ++j) dst[k * N + j] = src[j * ld + k];
        }
}

}  // namespace snn
