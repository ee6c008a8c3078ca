// Optimiser steps: one fused pass over the flat vector, one kernel per
// optimiser of SNN_OPTIMISER_LIST (engine/optimisers.h). The per-element
// math comes from engine/math.h, the same functions the CPU backend calls.
#include "cuda_backend.h"

namespace snn {
namespace cu {
namespace {

// Each kernel: a grid-stride loop over the parameters that reads and writes
// the state only where the rule keeps it (SGD without momentum may have no
// buffer).

__global__ void sgd_kernel(OptStep step, size_t count, float *params, const float *grads, float *m,
                           float *) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float p = params[i], b = m != nullptr ? m[i] : 0.0f;
        sgd_update(step, &p, grads[i], &b, nullptr);
        if (m != nullptr) m[i] = b;
        params[i] = p;
    }
}

__global__ void adam_kernel(OptStep step, size_t count, float *params, const float *grads, float *m,
                            float *v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float p = params[i], mi = m[i], vi = v[i];
        adam_update(step, &p, grads[i], &mi, &vi);
        m[i] = mi;
        v[i] = vi;
        params[i] = p;
    }
}

__global__ void adamw_kernel(OptStep step, size_t count, float *params, const float *grads, float *m,
                             float *v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float p = params[i], mi = m[i], vi = v[i];
        adamw_update(step, &p, grads[i], &mi, &vi);
        m[i] = mi;
        v[i] = vi;
        params[i] = p;
    }
}

__global__ void rmsprop_kernel(OptStep step, size_t count, float *params, const float *grads, float *,
                               float *v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float p = params[i], vi = v[i];
        rmsprop_update(step, &p, grads[i], nullptr, &vi);
        v[i] = vi;
        params[i] = p;
    }
}

__global__ void lion_kernel(OptStep step, size_t count, float *params, const float *grads, float *m,
                            float *) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float p = params[i], mi = m[i];
        lion_update(step, &p, grads[i], &mi, nullptr);
        m[i] = mi;
        params[i] = p;
    }
}

using Launcher = void (*)(cudaStream_t st, const OptStep &step, size_t count, float *params,
                          const float *grads, float *m, float *v);

#define SNN_CUDA_OPTIMISER_LAUNCHER(name, id)                                                   \
    void launch_##name(cudaStream_t st, const OptStep &step, size_t count, float *params,       \
                       const float *grads, float *m, float *v) {                                \
        SNN_LAUNCH(name##_kernel, blocks_for(count), kThreads, st, step, count, params, grads, m, \
                   v);                                                                          \
    }
SNN_OPTIMISER_LIST(SNN_CUDA_OPTIMISER_LAUNCHER)
#undef SNN_CUDA_OPTIMISER_LAUNCHER

const Launcher kLaunchers[] = {
#define SNN_CUDA_OPTIMISER_ENTRY(name, id) &launch_##name,
    SNN_OPTIMISER_LIST(SNN_CUDA_OPTIMISER_ENTRY)
#undef SNN_CUDA_OPTIMISER_ENTRY
};

static_assert(sizeof(kLaunchers) / sizeof(kLaunchers[0]) == kOptimiserCount,
              "one kernel per optimiser");

}  // namespace

void CudaBackend::optimiser_step(Stream *s, OptKind kind, const OptStep &step, size_t count,
                                 float *params, const float *grads, float *m, float *v) {
    CudaStream &cs = use(s);
    if (size_t(kind) >= kOptimiserCount)
        raise(SNN_ERR_INTERNAL, strf("unknown optimiser kind %d", static_cast<int>(kind)));
    if (count == 0) return;
    kLaunchers[size_t(kind)](cs.stream, step, count, params, grads, m, v);
    check_launch("optimiser kernel");
}

}  // namespace cu
}  // namespace snn
