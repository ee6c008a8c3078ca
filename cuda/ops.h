// What the CUDA op kernels (cuda/<op>.cu, each defining cuda_op_<name> for
// the registry ops/op_list.h) share: the op interface, the backend behind
// an OpArgs, and deterministic block reductions.
#pragma once

#include "cuda_backend.h"
#include "elementwise.h"
#include "ops/dims.h"
#include "ops/op.h"

namespace snn {
namespace cu {

inline CudaBackend &cuda_backend(Backend &be) { return static_cast<CudaBackend &>(be); }

// The CUDA stream of an op's call, checked to belong to its backend; makes
// the backend's device current.
inline CudaStream &stream_of(const OpArgs &a) { return cuda_backend(*a.be).use(a.s); }

// The values a node keeps past its fixed part (aux_fixed), per sample.
inline float *aux_per_sample(const OpArgs &a) { return a.aux + a.l->aux_fixed; }

// One block per item (channel, sample, row): the grid of `count` blocks,
// or SNN_ERR_UNSUPPORTED past CUDA's limit. `what` names the items.
inline unsigned int grid_of(int64_t count, const char *what) {
    if (count > 0x7fffffff)
        raise(SNN_ERR_UNSUPPORTED,
              strf("%lld %s: more than CUDA's 2^31 - 1 blocks", (long long)count, what));
    return static_cast<unsigned int>(count);
}

#if defined(__CUDACC__) || defined(SNN_CUDA_EMULATED)
// Sum of v over the block, added as a fixed binary tree, so the result never
// depends on timing; every thread gets it. Needs blockDim.x == kThreads and
// `buf` shared memory of kThreads values (free again on return).
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

// The largest v of the block (NaN only when every thread has NaN), as
// block_sum.
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
#endif

}  // namespace cu
}  // namespace snn
