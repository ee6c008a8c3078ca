// Products at a pass's precision (low_precision.h).
#include "low_precision.h"

namespace snn {
namespace cu {
namespace {

__global__ void to_low_kernel(uint16_t *dst, const float *src, size_t n, bool half) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = half ? float_to_half(src[i]) : float_to_bf16(src[i]);
}

cudaDataType_t data_type(Precision p) { return p == Precision::f16 ? CUDA_R_16F : CUDA_R_16BF; }

}  // namespace

size_t low_bytes(Precision p, std::initializer_list<size_t> counts) {
    if (p == Precision::f32) return 0;
    size_t values = 0;
    for (size_t c : counts) values += low_values(c);
    return values * sizeof(uint16_t);
}

void to_low(cudaStream_t stream, Precision p, uint16_t *dst, const float *src, size_t n) {
    if (n == 0) return;
    SNN_LAUNCH(to_low_kernel, blocks_for(n), kThreads, stream, dst, src, n, p == Precision::f16);
    check_launch("to_low kernel");
}

const void *operand(CudaStream &cs, Precision p, const float *src, size_t count, uint16_t *copy) {
    if (p == Precision::f32) return src;
    to_low(cs.stream, p, copy, src, count);
    return copy;
}

void gemm_at(CudaStream &cs, Precision p, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
             int64_t k, float alpha, const void *A, int64_t lda, const void *B, int64_t ldb, float beta, float *C,
             int64_t ldc, const char *what) {
    if (p == Precision::f32) {
        check(cublasSgemm_64(cs.blas, ta, tb, m, n, k, &alpha, static_cast<const float *>(A), lda,
                             static_cast<const float *>(B), ldb, &beta, C, ldc),
              what);
        return;
    }
    check(cublasGemmEx_64(cs.blas, ta, tb, m, n, k, &alpha, A, data_type(p), lda, B, data_type(p), ldb, &beta, C,
                          CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          what);
}

void gemm_batched_at(CudaStream &cs, Precision p, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                     int64_t n, int64_t k, float alpha, const void *A, int64_t lda, int64_t stride_a, const void *B,
                     int64_t ldb, int64_t stride_b, float beta, float *C, int64_t ldc, int64_t stride_c,
                     int64_t batch, const char *what) {
    if (p == Precision::f32) {
        check(cublasSgemmStridedBatched_64(cs.blas, ta, tb, m, n, k, &alpha, static_cast<const float *>(A), lda,
                                           stride_a, static_cast<const float *>(B), ldb, stride_b, &beta, C, ldc,
                                           stride_c, batch),
              what);
        return;
    }
    check(cublasGemmStridedBatchedEx_64(cs.blas, ta, tb, m, n, k, &alpha, A, data_type(p), lda, stride_a, B,
                                        data_type(p), ldb, stride_b, &beta, C, CUDA_R_32F, ldc, stride_c, batch,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          what);
}

}  // namespace cu
}  // namespace snn
