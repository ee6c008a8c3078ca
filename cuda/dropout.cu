// The dropout op (ops/dropout.cpp). Training mode: element i of the batch
// (flat index) gets scale_i = dropout_scale(key, i, p, 1 / (1 - p)) from the
// counter-based generator of core/math.h, the same number as on the CPU;
// aux[i] = scale_i and y = x * scale_i. Inference mode: y = x.
#include "ops.h"

namespace snn {
namespace cu {
namespace {

__global__ void dropout_forward_kernel(const float *x, float *y, float *scales, size_t total,
                                       uint64_t key, float p, float keep_scale) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        const float scale = dropout_scale(key, i, p, keep_scale);
        scales[i] = scale;
        y[i] = x[i] * scale;
    }
}

// dx = dy * scale
__global__ void dropout_backward_kernel(const float *dy, const float *scales, float *dx,
                                        size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x)
        dx[i] = dy[i] * scales[i];
}

void dropout_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const size_t total = static_cast<size_t>(a.n * a.l->out.size());
    if (total == 0) return;
    if (!a.training) {
        if (a.y != a.x[0]) a.be->copy(a.s, a.y, a.x[0], total * sizeof(float));
        return;
    }
    const double p = a.l->p;
    SNN_LAUNCH(dropout_forward_kernel, blocks_for(total), kThreads, cs.stream, a.x[0], a.y,
               aux_per_sample(a), total, a.key, (float)p, (float)(1.0 / (1.0 - p)));
    check_launch("dropout_forward kernel");
}

// dx = dy * scale in training mode, dy in inference mode.
void dropout_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const size_t total = static_cast<size_t>(a.n * a.l->out.size());
    if (a.dx[0] == nullptr || total == 0) return;
    if (!a.training) {
        if (a.dx[0] != a.dy) a.be->copy(a.s, a.dx[0], a.dy, total * sizeof(float));
        return;
    }
    SNN_LAUNCH(dropout_backward_kernel, blocks_for(total), kThreads, cs.stream, a.dy,
               aux_per_sample(a), a.dx[0], total);
    check_launch("dropout_backward kernel");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_dropout{nullptr, nullptr, cu::dropout_forward,
                                       cu::dropout_backward};

}  // namespace snn
