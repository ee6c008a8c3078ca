// cuDNN for the emulated CUDA build (cuda_runtime.h beside this file): the
// handle calls the backend makes for every stream, which succeed and do
// nothing. No convolution is provided: conv.cu is not part of the emulated
// build.
#pragma once

#include "cuda_runtime.h"

typedef enum {
    CUDNN_STATUS_SUCCESS = 0,
    CUDNN_STATUS_NOT_INITIALIZED = 1001,
    CUDNN_STATUS_BAD_PARAM = 2000,
    CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED = 4001,
    CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED = 4002,
} cudnnStatus_t;

typedef struct cudnnContext *cudnnHandle_t;

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle);
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle);
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream);
size_t cudnnGetVersion();
const char *cudnnGetErrorString(cudnnStatus_t status);
void cudnnGetLastErrorString(char *message, size_t max_size);
