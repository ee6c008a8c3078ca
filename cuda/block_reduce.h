// The block reduction of the CUDA kernels: every kernel that reduces over a
// block (batchnorm, layernorm and softmax statistics, the bias gradient's
// channel sums, the losses) calls block_sum or block_max here, and no kernel
// writes its own. No warp intrinsics, atomics or dynamic shared memory, so
// it also runs under the emulation (cuda/emulation/).
//
// The order is fixed, so a result never depends on timing: thread t puts its
// value v_t in buf[t]; then for stride = kThreads/2, kThreads/4, ..., 1,
// each thread t < stride sets buf[t] = buf[t] op buf[t + stride]. For a sum
// of 256 values that is the balanced binary tree
//   ((v_0 + v_128) + (v_64 + v_192)) + ... ,
// the pairs at distance 128 first, the root last. Each caller fixes the
// order of its threads' own values too: thread t accumulates elements t,
// t + kThreads, t + 2 kThreads, ... of the block's item (or of a fixed
// grid-stride loop), in that order.
#pragma once

#include <math.h>

#include "check.h"

#if defined(__CUDACC__) || defined(SNN_CUDA_EMULATED)

namespace snn {
namespace cu {

// Sum of v over the block (T float or double), every thread gets it. Needs
// blockDim.x == kThreads and `buf` a __shared__ array of kThreads values,
// free again on return (so consecutive calls may share it).
template <typename T>
__device__ T block_sum(T v, T *buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if ((int)threadIdx.x < stride) buf[threadIdx.x] += buf[threadIdx.x + stride];
        __syncthreads();
    }
    const T total = buf[0];
    __syncthreads();
    return total;
}

// The largest v of the block (NaN only when every thread has NaN), in the
// same tree and with the same needs as block_sum.
__device__ __forceinline__ float block_max(float v, float *buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if ((int)threadIdx.x < stride)
            buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + stride]);
        __syncthreads();
    }
    const float most = buf[0];
    __syncthreads();
    return most;
}

}  // namespace cu
}  // namespace snn

#endif
