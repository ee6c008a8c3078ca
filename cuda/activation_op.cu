// The activation op (ops/activation.cpp): relu, leaky_relu, tanh, sigmoid,
// gelu or silu as a layer of its own, element-wise with core/math.h.
#include "ops.h"

namespace snn {
namespace cu {
namespace {

// y = act(x)
__global__ void activation_forward_kernel(const float *x, float *y, size_t total, Act act) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x)
        y[e] = activate(act, x[e]);
}

// dx = dy * act'(v), v the kept output y, or the kept input x for gelu and
// silu
__global__ void activation_backward_kernel(const float *dy, const float *v, float *dx,
                                           size_t total, Act act) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x)
        dx[e] = dy[e] * activation_derivative(act, v[e]);
}

void activation_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const size_t total = static_cast<size_t>(a.n * a.l->out.size());
    if (total == 0) return;
    SNN_LAUNCH(activation_forward_kernel, blocks_for(total), kThreads, cs.stream, a.x[0], a.y,
               total, a.l->act);
    check_launch("activation_forward kernel");
}

void activation_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const size_t total = static_cast<size_t>(a.n * a.l->out.size());
    if (a.dx[0] == nullptr || total == 0) return;
    const float *v = act_uses_input(a.l->act) ? a.x[0] : a.y;
    SNN_LAUNCH(activation_backward_kernel, blocks_for(total), kThreads, cs.stream, a.dy, v, a.dx[0],
               total, a.l->act);
    check_launch("activation_backward kernel");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_activation{nullptr, nullptr, cu::activation_forward,
                                          cu::activation_backward};

}  // namespace snn
