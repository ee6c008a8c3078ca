// cuBLAS for the emulated CUDA build (cuda_runtime.h beside this file): the
// handle calls the backend makes for every stream, which succeed and do
// nothing, and the products (cublas_gemm.cpp), plain loops column-major as
// cuBLAS defines them: float32, and bf16 or fp16 operands (16-bit storage,
// read through core/math.h's conversions) with float32 C and sums.
#pragma once

#include "cuda_runtime.h"

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;

typedef enum {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_TF32_TENSOR_OP_MATH = 3,
} cublasMath_t;

typedef struct cublasContext *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t bytes);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
const char *cublasGetStatusString(cublasStatus_t status);
const char *cublasGetStatusName(cublasStatus_t status);

typedef enum {
    CUBLAS_OP_N = 0,
    CUBLAS_OP_T = 1,
} cublasOperation_t;

// C = alpha op(A) op(B) + beta C, column-major, C m x n.
cublasStatus_t cublasSgemm_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                              int64_t m, int64_t n, int64_t k, const float *alpha, const float *A, int64_t lda,
                              const float *B, int64_t ldb, const float *beta, float *C, int64_t ldc);
// The same for batch products i, A + i strideA, B + i strideB, C + i strideC.
cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                            const float *alpha, const float *A, int64_t lda, long long strideA,
                                            const float *B, int64_t ldb, long long strideB, const float *beta,
                                            float *C, int64_t ldc, long long strideC, int64_t batchCount);

// The data types of cublasGemmEx's matrices (CUDA's library_types.h) and
// its compute types and algorithms: the emulation takes A and B in float,
// bf16 or fp16 of the same type, C in float, computed in float.
typedef enum {
    CUDA_R_32F = 0,
    CUDA_R_16F = 2,
    CUDA_R_16BF = 14,
} cudaDataType_t;
typedef cudaDataType_t cudaDataType;

typedef enum {
    CUBLAS_COMPUTE_32F = 68,
} cublasComputeType_t;

typedef enum {
    CUBLAS_GEMM_DEFAULT = -1,
} cublasGemmAlgo_t;

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                               int64_t n, int64_t k, const void *alpha, const void *A, cudaDataType Atype,
                               int64_t lda, const void *B, cudaDataType Btype, int64_t ldb, const void *beta,
                               void *C, cudaDataType Ctype, int64_t ldc, cublasComputeType_t computeType,
                               cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                             const void *alpha, const void *A, cudaDataType Atype, int64_t lda,
                                             long long strideA, const void *B, cudaDataType Btype, int64_t ldb,
                                             long long strideB, const void *beta, void *C, cudaDataType Ctype,
                                             int64_t ldc, long long strideC, int64_t batchCount,
                                             cublasComputeType_t computeType, cublasGemmAlgo_t algo);
