// cuBLAS for the emulated CUDA build (cuda_runtime.h beside this file): the
// handle calls the backend makes for every stream, which succeed and do
// nothing, and cublasSgemm_64 as plain loops (for the recurrent ops' time
// loops, cuda/recurrent.cuh; dense.cu is not part of the emulated build).
#pragma once

#include <stdint.h>

#include "cuda_runtime.h"

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
} cublasStatus_t;

typedef enum {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_TF32_TENSOR_OP_MATH = 3,
} cublasMath_t;

typedef enum {
    CUBLAS_OP_N = 0,
    CUBLAS_OP_T = 1,
} cublasOperation_t;

typedef struct cublasContext *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t bytes);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
// C = alpha op(A) op(B) + beta C, column-major, each element a sum over k in
// order (C is not read when beta is 0, as cuBLAS).
cublasStatus_t cublasSgemm_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                              int64_t m, int64_t n, int64_t k, const float *alpha, const float *A, int64_t lda,
                              const float *B, int64_t ldb, const float *beta, float *C, int64_t ldc);
const char *cublasGetStatusString(cublasStatus_t status);
const char *cublasGetStatusName(cublasStatus_t status);
