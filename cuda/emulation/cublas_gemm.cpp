// The emulated cuBLAS products (cublas_v2.h): column-major as cuBLAS
// defines them, each element of C summed over k in order in float. They let
// the kernels around cuBLAS calls run in the emulated suite; their speed and
// rounding order are not cuBLAS's.
#include "cublas_v2.h"

namespace {

// Element (r, c) of op(M), M column-major with leading dimension ld.
inline float at(const float *M, int64_t ld, cublasOperation_t op, int64_t r, int64_t c) {
    return op == CUBLAS_OP_N ? M[r + c * ld] : M[c + r * ld];
}

void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, float alpha,
          const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    for (int64_t c = 0; c < n; ++c)
        for (int64_t r = 0; r < m; ++r) {
            float sum = 0.0f;
            for (int64_t i = 0; i < k; ++i) sum += at(A, lda, ta, r, i) * at(B, ldb, tb, i, c);
            float &out = C[r + c * ldc];
            out = beta == 0.0f ? alpha * sum : alpha * sum + beta * out;
        }
}

}  // namespace

cublasStatus_t cublasSgemm_64(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                              int64_t n, int64_t k, const float *alpha, const float *A, int64_t lda,
                              const float *B, int64_t ldb, const float *beta, float *C, int64_t ldc) {
    if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
    gemm(transa, transb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float *alpha, const float *A, int lda,
                                         long long strideA, const float *B, int ldb, long long strideB,
                                         const float *beta, float *C, int ldc, long long strideC,
                                         int batchCount) {
    if (m < 0 || n < 0 || k < 0 || batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
    for (int i = 0; i < batchCount; ++i)
        gemm(transa, transb, m, n, k, *alpha, A + i * strideA, lda, B + i * strideB, ldb, *beta, C + i * strideC,
             ldc);
    return CUBLAS_STATUS_SUCCESS;
}
