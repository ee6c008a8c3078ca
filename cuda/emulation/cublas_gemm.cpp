// The emulated cuBLAS products (cublas_v2.h): column-major as cuBLAS
// defines them, each element of C summed over k in order in float. They let
// the kernels around cuBLAS calls run in the emulated suite; their speed and
// rounding order are not cuBLAS's. bf16 and fp16 operands are read with
// core/math.h's conversions, exactly as the tensor cores take them, and
// multiplied and summed in float (cuBLAS's CUBLAS_COMPUTE_32F).
#include "cublas_v2.h"

#include "core/math.h"

namespace {

// A matrix of one of the types cublasGemmEx takes.
struct Matrix {
    const void *p;
    cudaDataType_t type;
    int64_t ld;
};

// Element (r, c) of op(M), M column-major.
inline float at(const Matrix &M, cublasOperation_t op, int64_t r, int64_t c) {
    const int64_t i = op == CUBLAS_OP_N ? r + c * M.ld : c + r * M.ld;
    switch (M.type) {
    case CUDA_R_16BF: return snn::bf16_to_float(static_cast<const uint16_t *>(M.p)[i]);
    case CUDA_R_16F: return snn::half_to_float(static_cast<const uint16_t *>(M.p)[i]);
    default: return static_cast<const float *>(M.p)[i];
    }
}

void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, float alpha, const Matrix &A,
          const Matrix &B, float beta, float *C, int64_t ldc) {
    for (int64_t c = 0; c < n; ++c)
        for (int64_t r = 0; r < m; ++r) {
            float sum = 0.0f;
            for (int64_t i = 0; i < k; ++i) sum += at(A, ta, r, i) * at(B, tb, i, c);
            float &out = C[r + c * ldc];
            out = beta == 0.0f ? alpha * sum : alpha * sum + beta * out;
        }
}

// The combinations the backend uses: A and B of one type, C float, float
// compute.
bool supported(cudaDataType_t a, cudaDataType_t b, cudaDataType_t c, cublasComputeType_t compute) {
    return a == b && (a == CUDA_R_32F || a == CUDA_R_16F || a == CUDA_R_16BF) && c == CUDA_R_32F &&
           compute == CUBLAS_COMPUTE_32F;
}

// Bytes of one element of A or B.
int64_t size_of(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

const void *offset(const void *p, cudaDataType_t t, long long values) {
    return static_cast<const char *>(p) + values * size_of(t);
}

}  // namespace

cublasStatus_t cublasSgemm_64(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                              int64_t n, int64_t k, const float *alpha, const float *A, int64_t lda,
                              const float *B, int64_t ldb, const float *beta, float *C, int64_t ldc) {
    if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
    gemm(transa, transb, m, n, k, *alpha, {A, CUDA_R_32F, lda}, {B, CUDA_R_32F, ldb}, *beta, C, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb,
                                            int64_t m, int64_t n, int64_t k, const float *alpha, const float *A,
                                            int64_t lda, long long strideA, const float *B, int64_t ldb,
                                            long long strideB, const float *beta, float *C, int64_t ldc,
                                            long long strideC, int64_t batchCount) {
    if (m < 0 || n < 0 || k < 0 || batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
    for (int64_t i = 0; i < batchCount; ++i)
        gemm(transa, transb, m, n, k, *alpha, {A + i * strideA, CUDA_R_32F, lda},
             {B + i * strideB, CUDA_R_32F, ldb}, *beta, C + i * strideC, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                               int64_t n, int64_t k, const void *alpha, const void *A, cudaDataType Atype,
                               int64_t lda, const void *B, cudaDataType Btype, int64_t ldb, const void *beta,
                               void *C, cudaDataType Ctype, int64_t ldc, cublasComputeType_t computeType,
                               cublasGemmAlgo_t algo) {
    return cublasGemmStridedBatchedEx_64(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0,
                                         beta, C, Ctype, ldc, 0, 1, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb,
                                             int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
                                             cudaDataType Atype, int64_t lda, long long strideA, const void *B,
                                             cudaDataType Btype, int64_t ldb, long long strideB, const void *beta,
                                             void *C, cudaDataType Ctype, int64_t ldc, long long strideC,
                                             int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
    if (m < 0 || n < 0 || k < 0 || batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (!supported(Atype, Btype, Ctype, computeType)) return CUBLAS_STATUS_NOT_SUPPORTED;
    const float a = *static_cast<const float *>(alpha), b = *static_cast<const float *>(beta);
    for (int64_t i = 0; i < batchCount; ++i)
        gemm(transa, transb, m, n, k, a, {offset(A, Atype, i * strideA), Atype, lda},
             {offset(B, Btype, i * strideB), Btype, ldb}, b, static_cast<float *>(C) + i * strideC, ldc);
    return CUBLAS_STATUS_SUCCESS;
}
