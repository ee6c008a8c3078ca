// What the CUDA op kernels (cuda/<op>.cu, each defining cuda_op_<name> for
// the registry core/op_list.h) share: the op interface, the backend behind
// an OpArgs, and the block reductions (block_reduce.h).
#pragma once

#include "block_reduce.h"
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

}  // namespace cu
}  // namespace snn
