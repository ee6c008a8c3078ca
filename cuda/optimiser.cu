// Optimiser steps: one fused pass over the flat vector. The per-element
// math comes from engine/math.h, the same functions the CPU backend calls.
#include "cuda_backend.h"

namespace snn {
namespace cu {
namespace {

// One fused pass over the parameters; the state m, v is read and written
// only where the rule uses it.
__global__ void optimiser_kernel(OptKind kind, OptStep step, size_t count, float *params,
                                 const float *grads, float *m, float *v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float p = params[i];
        const float g = grads[i];
        switch (kind) {
            case OptKind::sgd: {
                float b = m != nullptr ? m[i] : 0.0f;
                sgd_update(step, &p, g, &b);
                if (m != nullptr) m[i] = b;
                break;
            }
            case OptKind::adam:
            case OptKind::adamw: {
                float mi = m[i], vi = v[i];
                adam_update(step, kind == OptKind::adamw, &p, g, &mi, &vi);
                m[i] = mi;
                v[i] = vi;
                break;
            }
            case OptKind::rmsprop: {
                float vi = v[i];
                rmsprop_update(step, &p, g, &vi);
                v[i] = vi;
                break;
            }
        }
        params[i] = p;
    }
}

}  // namespace

void CudaBackend::optimiser_step(Stream *s, OptKind kind, const OptStep &step, size_t count,
                                 float *params, const float *grads, float *m, float *v) {
    CudaStream &cs = use(s);
    switch (kind) {
        case OptKind::sgd:
            if (step.momentum != 0.0f && m == nullptr)
                raise(SNN_ERR_INTERNAL, "SGD with momentum needs its momentum buffer");
            break;
        case OptKind::adam:
        case OptKind::adamw:
            if (m == nullptr || v == nullptr)
                raise(SNN_ERR_INTERNAL, "Adam needs both moment buffers");
            break;
        case OptKind::rmsprop:
            if (v == nullptr) raise(SNN_ERR_INTERNAL, "RMSProp needs its square-average buffer");
            break;
        default:
            raise(SNN_ERR_INTERNAL, strf("unknown optimiser kind %d", static_cast<int>(kind)));
    }
    if (count == 0) return;
    SNN_LAUNCH(optimiser_kernel, blocks_for(count), kThreads, cs.stream, kind, step, count, params,
               grads, m, v);
    check_launch("optimiser kernel");
}

}  // namespace cu
}  // namespace snn
