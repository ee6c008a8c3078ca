// conv1d's lowering and its adjoint (conv1d_lower.h): one thread per value
// written, each reading what it sums in a fixed order, so nothing depends on
// timing and the values equal the CPU's bit for bit.
#include "conv1d_lower.h"

namespace snn {
namespace cu {
namespace {

__global__ void conv1d_lower_kernel(Conv1dDims d, const float *x, const int32_t *lengths, int64_t first,
                                    size_t total, float *col) {
    const int64_t cols = d.cols();
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x)
        col[e] = conv1d_lowered(d, x, lengths, first, (int64_t)(e / cols), (int64_t)(e % cols));
}

__global__ void conv1d_lower_adjoint_kernel(Conv1dDims d, const float *dcol, const int32_t *lengths,
                                            int64_t first, size_t total, float *dx) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int64_t s = first + (int64_t)(e / (size_t)(d.steps * d.channels));
        const int64_t t = (int64_t)(e / (size_t)d.channels) % d.steps, c = (int64_t)(e % (size_t)d.channels);
        dx[(size_t)(first * d.steps * d.channels) + e] = conv1d_adjoint(d, dcol, lengths, first, s, t, c);
    }
}

}  // namespace

void conv1d_lower(cudaStream_t stream, const Conv1dDims &d, const float *x, const int32_t *lengths,
                  int64_t first, int64_t nb, float *col) {
    const size_t total = static_cast<size_t>(nb * d.out_steps * d.cols());
    if (total == 0) return;
    SNN_LAUNCH(conv1d_lower_kernel, blocks_for(total), kThreads, stream, d, x, lengths, first, total, col);
    check_launch("conv1d_lower kernel");
}

void conv1d_lower_adjoint(cudaStream_t stream, const Conv1dDims &d, const float *dcol,
                          const int32_t *lengths, int64_t first, int64_t nb, float *dx) {
    const size_t total = static_cast<size_t>(nb * d.steps * d.channels);
    if (total == 0) return;
    SNN_LAUNCH(conv1d_lower_adjoint_kernel, blocks_for(total), kThreads, stream, d, dcol, lengths, first,
               total, dx);
    check_launch("conv1d_lower_adjoint kernel");
}

}  // namespace cu
}  // namespace snn
