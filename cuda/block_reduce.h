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

// Walks the values e = first, first + kThreads, ... of one channel of a
// [outer][channels][inner] array (value e of channel c is sample e / inner,
// pixel e % inner) without a division per value: one at the start, then a
// fixed step of kThreads.
struct ChannelWalk {
    int64_t i, r, step_i, step_r, channels, inner;
    __device__ ChannelWalk(int64_t first, int64_t channels_, int64_t inner_)
        : i(first / inner_), r(first - (first / inner_) * inner_), step_i(kThreads / inner_),
          step_r(kThreads - (kThreads / inner_) * inner_), channels(channels_), inner(inner_) {}
    __device__ size_t at(int64_t c) const { return static_cast<size_t>((i * channels + c) * inner + r); }
    __device__ void next() {
        i += step_i;
        r += step_r;
        if (r >= inner) {
            r -= inner;
            ++i;
        }
    }
};

// How the `count` values of each channel are split into slices, one block
// each: slices of at least `min_values` values, at most kMaxSlices of them,
// and channels * slices * per_slice at most `scratch` partial sums. One
// slice (the whole channel in one block) needs no scratch.
constexpr int64_t kMaxSlices = 64;
struct Slicing {
    int64_t slices, length;  // length: values per slice (the last may have fewer)
};
inline Slicing slicing_for(int64_t count, int64_t channels, int64_t min_values, size_t scratch,
                           int64_t per_slice) {
    int64_t s = count / min_values;
    if (s > kMaxSlices) s = kMaxSlices;
    const int64_t room = channels > 0 ? static_cast<int64_t>(scratch) / (channels * per_slice) : 1;
    if (s > room) s = room;
    if (s < 1) s = 1;
    return {s, (count + s - 1) / s};
}

}  // namespace cu
}  // namespace snn

#endif
