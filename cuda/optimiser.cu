// Optimiser steps: one fused pass over the flat vector, one kernel per
// optimiser of SNN_OPTIMISER_LIST (core/optimisers.h). The per-element
// math comes from core/math.h, the same functions the CPU backend calls.
#include "block_reduce.h"
#include "cuda_backend.h"

namespace snn {
namespace cu {
namespace {

// Clipping by the gradient norm: the L2 norm of the flat gradient in one
// pass, deterministic (block_reduce.h's fixed order): kNormBlocks blocks
// each sum the squares (in double) of a fixed grid-stride set of elements
// into a partial, then one block adds the partials and writes the norm.
// The update kernels read it on the device: no host synchronisation.
constexpr unsigned int kNormBlocks = kThreads;
static_assert(kGradNormDoubles >= 1 + kNormBlocks, "room for the partial sums");

__global__ void grad_norm_partial_kernel(const float *grads, size_t count, double *partials) {
    __shared__ double buf[kThreads];
    double acc = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        const double x = grads[i];
        acc += x * x;
    }
    const double total = block_sum(acc, buf);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void grad_norm_finish_kernel(const double *partials, double *norm) {
    __shared__ double buf[kThreads];
    const double total = block_sum(partials[threadIdx.x], buf);
    if (threadIdx.x == 0) norm[0] = sqrt(total);
}

// The factor of the gradient: 1 without clipping.
__device__ __forceinline__ float clip_factor(const OptStep &step, const double *norm) {
    return norm != nullptr ? clip_coefficient(step.max_grad_norm, *norm) : 1.0f;
}

// An optimiser's rule as a type: update(step, p, g, m, v) is math.h's
// <name>_update, which reads and writes the state it keeps through m and v
// and ignores the other pointer.
#define SNN_CUDA_OPTIMISER_RULE(name, id)                                                     \
    struct name##_rule {                                                                      \
        __device__ static void update(const OptStep &s, float *p, float g, float *m, float *v) { \
            name##_update(s, p, g, m, v);                                                     \
        }                                                                                     \
    };
SNN_OPTIMISER_LIST(SNN_CUDA_OPTIMISER_RULE)
#undef SNN_CUDA_OPTIMISER_RULE

// One grid-stride loop over the parameters for every optimiser R: the state
// buffers m and v are read and written only where the kind keeps them (SGD
// without momentum may have no buffer).
template <class R>
__global__ void update_kernel(OptStep step, size_t count, float *params, const float *grads, float *m,
                              float *v, const double *norm) {
    const float coef = clip_factor(step, norm);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float p = params[i], mi = m != nullptr ? m[i] : 0.0f, vi = v != nullptr ? v[i] : 0.0f;
        R::update(step, &p, coef * grads[i], &mi, &vi);
        if (m != nullptr) m[i] = mi;
        if (v != nullptr) v[i] = vi;
        params[i] = p;
    }
}

using Launcher = void (*)(cudaStream_t st, const OptStep &step, size_t count, float *params,
                          const float *grads, float *m, float *v, const double *norm);

#define SNN_CUDA_OPTIMISER_LAUNCHER(name, id)                                                   \
    void launch_##name(cudaStream_t st, const OptStep &step, size_t count, float *params,       \
                       const float *grads, float *m, float *v, const double *norm) {            \
        SNN_LAUNCH(update_kernel<name##_rule>, blocks_for(count), kThreads, st, step, count, params, grads, m, \
                   v, norm);                                                                    \
    }
SNN_OPTIMISER_LIST(SNN_CUDA_OPTIMISER_LAUNCHER)
#undef SNN_CUDA_OPTIMISER_LAUNCHER

const Launcher kLaunchers[] = {
#define SNN_CUDA_OPTIMISER_ENTRY(name, id) &launch_##name,
    SNN_OPTIMISER_LIST(SNN_CUDA_OPTIMISER_ENTRY)
#undef SNN_CUDA_OPTIMISER_ENTRY
};

static_assert(sizeof(kLaunchers) / sizeof(kLaunchers[0]) == kOptimiserCount,
              "one launcher per optimiser");

}  // namespace

void CudaBackend::optimiser_step(Stream *s, OptKind kind, const OptStep &step, size_t count,
                                 float *params, const float *grads, float *m, float *v, double *norm) {
    CudaStream &cs = use(s);
    if (size_t(kind) >= kOptimiserCount)
        raise(SNN_ERR_INTERNAL, strf("unknown optimiser kind %d", static_cast<int>(kind)));
    if (norm != nullptr) {
        SNN_LAUNCH(grad_norm_partial_kernel, kNormBlocks, kThreads, cs.stream, grads, count, norm + 1);
        SNN_LAUNCH(grad_norm_finish_kernel, 1, kThreads, cs.stream, norm + 1, norm);
        check_launch("gradient norm kernels");
    }
    if (count == 0) return;
    kLaunchers[size_t(kind)](cs.stream, step, count, params, grads, m, v, norm);
    check_launch("optimiser kernel");
}

}  // namespace cu
}  // namespace snn
