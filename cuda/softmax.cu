// The softmax op (ops/softmax.cpp): y = e^x / sum e^x over the features of
// a vector, or over the channels of each pixel of an image. Each group of
// values normalised together is `channels` values `inner` apart: a vector's
// features (inner = 1) or one pixel's channels (inner = h*w).
//
// Vectors take a block per sample, its sums added as a fixed tree
// (block_sum); images a thread per pixel, its sums added in channel order.
// Either way nothing depends on timing; sums are accumulated in double and
// the per-element formulas are core/math.h's softmax_*, as on the CPU.
#include "ops.h"

namespace snn {
namespace cu {
namespace {

// y = e^(x - max) / sum e^(x - max), over a block's row of `channels` values.
__global__ void softmax_rows_forward_kernel(const float *x, float *y, int64_t channels) {
    __shared__ float most_buf[kThreads];
    __shared__ double sum_buf[kThreads];
    const float *xr = x + blockIdx.x * channels;
    float *yr = y + blockIdx.x * channels;
    float most = -INFINITY;
    for (int64_t c = threadIdx.x; c < channels; c += kThreads) most = fmaxf(most, xr[c]);
    most = block_max(most, most_buf);
    double sum = 0.0;
    for (int64_t c = threadIdx.x; c < channels; c += kThreads) {
        const float e = softmax_exp(xr[c], most);
        yr[c] = e;
        sum += e;
    }
    const float total = (float)block_sum(sum, sum_buf);
    for (int64_t c = threadIdx.x; c < channels; c += kThreads) yr[c] = softmax_y(yr[c], total);
}

// dx = y (dy - sum(dy y)), over a block's row.
__global__ void softmax_rows_backward_kernel(const float *y, const float *dy, float *dx,
                                             int64_t channels) {
    __shared__ double sum_buf[kThreads];
    const size_t row = blockIdx.x * (size_t)channels;
    double dot = 0.0;
    for (int64_t c = threadIdx.x; c < channels; c += kThreads)
        dot += (double)dy[row + c] * (double)y[row + c];
    const float total = (float)block_sum(dot, sum_buf);
    for (int64_t c = threadIdx.x; c < channels; c += kThreads)
        dx[row + c] = softmax_dx(y[row + c], dy[row + c], total);
}

// As the row kernels, one thread per pixel of groups samples x inner pixels.
__global__ void softmax_pixels_forward_kernel(const float *x, float *y, size_t groups,
                                              int64_t channels, int64_t inner) {
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < groups;
         g += (size_t)gridDim.x * blockDim.x) {
        const size_t i = g / inner, r = g % inner;
        const size_t base = i * channels * inner + r;
        float most = -INFINITY;
        for (int64_t c = 0; c < channels; ++c) most = fmaxf(most, x[base + c * inner]);
        double sum = 0.0;
        for (int64_t c = 0; c < channels; ++c) {
            const float e = softmax_exp(x[base + c * inner], most);
            y[base + c * inner] = e;
            sum += e;
        }
        const float total = (float)sum;
        for (int64_t c = 0; c < channels; ++c)
            y[base + c * inner] = softmax_y(y[base + c * inner], total);
    }
}

__global__ void softmax_pixels_backward_kernel(const float *y, const float *dy, float *dx,
                                               size_t groups, int64_t channels, int64_t inner) {
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < groups;
         g += (size_t)gridDim.x * blockDim.x) {
        const size_t i = g / inner, r = g % inner;
        const size_t base = i * channels * inner + r;
        double dot = 0.0;
        for (int64_t c = 0; c < channels; ++c)
            dot += (double)dy[base + c * inner] * (double)y[base + c * inner];
        const float total = (float)dot;
        for (int64_t c = 0; c < channels; ++c)
            dx[base + c * inner] = softmax_dx(y[base + c * inner], dy[base + c * inner], total);
    }
}

struct Groups {
    int64_t channels, inner;
};

// A sequence is n * T rows of its features.
Groups groups_of(const Layer &l) {
    if (l.in.is_image) return {l.in.c, l.in.h * l.in.w};
    return {l.in.row_size(), 1};
}

void softmax_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Groups g = groups_of(*a.l);
    const int64_t rows = rows_of(*a.l, a.n);
    if (rows <= 0 || g.channels <= 0) return;
    if (g.inner == 1) {
        SNN_LAUNCH(softmax_rows_forward_kernel, grid_of(rows, "softmax rows"), kThreads, cs.stream,
                   a.x[0], a.y, g.channels);
    } else {
        const size_t groups = static_cast<size_t>(a.n * g.inner);
        SNN_LAUNCH(softmax_pixels_forward_kernel, blocks_for(groups), kThreads, cs.stream, a.x[0],
                   a.y, groups, g.channels, g.inner);
    }
    check_launch("softmax_forward kernel");
}

void softmax_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Groups g = groups_of(*a.l);
    const int64_t rows = rows_of(*a.l, a.n);
    if (a.dx[0] == nullptr || rows <= 0 || g.channels <= 0) return;
    if (g.inner == 1) {
        SNN_LAUNCH(softmax_rows_backward_kernel, grid_of(rows, "softmax rows"), kThreads, cs.stream,
                   a.y, a.dy, a.dx[0], g.channels);
    } else {
        const size_t groups = static_cast<size_t>(a.n * g.inner);
        SNN_LAUNCH(softmax_pixels_backward_kernel, blocks_for(groups), kThreads, cs.stream, a.y,
                   a.dy, a.dx[0], groups, g.channels, g.inner);
    }
    check_launch("softmax_backward kernel");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_softmax{nullptr, nullptr, cu::softmax_forward,
                                       cu::softmax_backward};

}  // namespace snn
