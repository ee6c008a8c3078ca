// The posembed op (ops/posembed.cpp): y[s][t][f] = x[s][t][f] + W[t][f];
// dx = dy, dW[t][f] = the sum over samples of dy[s][t][f], one thread per
// weight summing in double in sample order, as the CPU: the same bits.
#include "ops.h"

namespace snn {
namespace cu {
namespace {

__global__ void posembed_forward_kernel(const float *x, const float *w, float *y, size_t total,
                                        int64_t size) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x)
        y[e] = x[e] + w[(int64_t)(e % size)];
}

__global__ void posembed_grad_kernel(const float *dy, float *dw, int64_t n, int64_t size) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < size;
         k += (int64_t)gridDim.x * blockDim.x) {
        double sum = 0.0;
        for (int64_t s = 0; s < n; ++s) sum += dy[s * size + k];
        dw[k] = (float)sum;
    }
}

void posembed_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const size_t total = static_cast<size_t>(a.n * l.in.size());
    if (total == 0) return;
    SNN_LAUNCH(posembed_forward_kernel, blocks_for(total), kThreads, cs.stream, a.x[0],
               a.params + l.weight_offset, a.y, total, l.in.size());
    check_launch("posembed_forward kernel");
}

void posembed_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const int64_t size = l.in.size();
    SNN_LAUNCH(posembed_grad_kernel, blocks_for(static_cast<size_t>(size)), kThreads, cs.stream, a.dy,
               a.grads + l.weight_offset, a.n, size);
    check_launch("posembed_grad kernel");
    if (a.dx[0] != nullptr)
        a.be->copy(a.s, a.dx[0], a.dy, static_cast<size_t>(a.n * size) * sizeof(float));
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_posembed{nullptr, nullptr, cu::posembed_forward, cu::posembed_backward};

}  // namespace snn
