// The layernorm op (ops/layernorm.cpp): per sample over its F features
// (F = in.size(), all of an image's values),
//   y = (x - mean) * invstd * weight + bias,   invstd = 1 / sqrt(var + eps),
// mean and biased variance of the sample, weight and bias of F values; the
// same in both modes. aux keeps each sample's [mean, invstd].
//
// The statistics take one block per sample, its sums added as a fixed tree
// (block_sum) in double; the parameter gradients one thread per feature,
// summing over the batch in sample order. Nothing depends on timing.
#include "ops.h"

namespace snn {
namespace cu {
namespace {

// mean = sum x / F, var = sum (x - mean)^2 / F (two passes, in double) of
// the block's row xs, the same in every thread.
__device__ void row_moments(const float *xs, int64_t features, double *buf, double &mean, double &var) {
    double sum = 0.0;
    for (int64_t f = threadIdx.x; f < features; f += kThreads) sum += xs[f];
    mean = block_sum(sum, buf) / (double)features;
    double squares = 0.0;
    for (int64_t f = threadIdx.x; f < features; f += kThreads) {
        const double d = (double)xs[f] - mean;
        squares += d * d;
    }
    var = block_sum(squares, buf) / (double)features;
}

// The block's sample's moments, aux[2i..2i+2) = [mean, invstd],
// y = (x - mean) * invstd * w + b.
__global__ void layernorm_forward_kernel(const float *x, float *y, const float *w, const float *b,
                                         float *aux, int64_t features, double eps) {
    __shared__ double buf[kThreads];
    const int64_t i = blockIdx.x;
    const float *xs = x + i * features;
    float *ys = y + i * features;
    double mean_d = 0.0, var = 0.0;
    row_moments(xs, features, buf, mean_d, var);
    const float mean = (float)mean_d;
    const float invstd = norm_invstd(var, eps);
    if (threadIdx.x == 0) {
        aux[2 * i] = mean;
        aux[2 * i + 1] = invstd;
    }
    for (int64_t f = threadIdx.x; f < features; f += kThreads)
        ys[f] = norm_y(norm_xhat(xs[f], mean, invstd), w[f], b[f]);
}

// dweight[f] = sum over samples of dy xhat, dbias[f] = sum of dy (written,
// not accumulated), xhat = (x - mean) * invstd of each sample.
__global__ void layernorm_param_grads_kernel(const float *x, const float *dy, const float *aux,
                                             float *dw, float *db, int64_t n, int64_t features) {
    for (int64_t f = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; f < features;
         f += (int64_t)gridDim.x * blockDim.x) {
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            const size_t k = static_cast<size_t>(i * features + f);
            const float xhat = norm_xhat(x[k], aux[2 * i], aux[2 * i + 1]);
            sum_dy += dy[k];
            sum_dy_xhat += (double)dy[k] * (double)xhat;
        }
        dw[f] = (float)sum_dy_xhat;
        db[f] = (float)sum_dy;
    }
}

// With g = dy * w and c = x - mean over the block's sample, its moments
// recomputed in double (core/math.h's layernorm_dx):
//   dx = invstd ((g - mean(g)) - c mean(g c) / (var + eps))
// The sums are read before any dx is written, and each thread writes only
// the elements it read, so dx may be dy's memory.
__global__ void layernorm_input_grad_kernel(const float *x, const float *dy, float *dx,
                                            const float *w, int64_t features, double eps) {
    __shared__ double buf[kThreads];
    const int64_t i = blockIdx.x;
    const size_t row = static_cast<size_t>(i * features);
    double mean = 0.0, var = 0.0;
    row_moments(x + row, features, buf, mean, var);
    double sum_g = 0.0, sum_g_c = 0.0;
    for (int64_t f = threadIdx.x; f < features; f += kThreads) {
        const float g = dy[row + f] * w[f];
        sum_g += g;
        sum_g_c += (double)g * ((double)x[row + f] - mean);
    }
    sum_g = block_sum(sum_g, buf);
    sum_g_c = block_sum(sum_g_c, buf);
    const LayerNormGradRow r = layernorm_grad_row(sum_g, sum_g_c, var, eps, (double)features);
    for (int64_t f = threadIdx.x; f < features; f += kThreads)
        dx[row + f] = layernorm_dx(r, dy[row + f] * w[f], (double)x[row + f] - mean);
}

void layernorm_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const int64_t features = l.in.row_size(), rows = rows_of(l, a.n);
    if (rows <= 0 || features <= 0) return;
    SNN_LAUNCH(layernorm_forward_kernel, grid_of(rows, "layernorm rows"), kThreads, cs.stream,
               a.x[0], a.y, a.params + l.weight_offset, a.params + l.bias_offset, aux_per_sample(a),
               features, l.eps);
    check_launch("layernorm_forward kernel");
}

// The parameter gradients first: the input gradient may overwrite dy.
void layernorm_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const int64_t features = l.in.row_size(), rows = rows_of(l, a.n);
    if (rows <= 0 || features <= 0) return;
    const float *aux = aux_per_sample(a);
    SNN_LAUNCH(layernorm_param_grads_kernel, blocks_for(static_cast<size_t>(features)), kThreads,
               cs.stream, a.x[0], a.dy, aux, a.grads + l.weight_offset, a.grads + l.bias_offset,
               rows, features);
    check_launch("layernorm_param_grads kernel");
    if (a.dx[0] == nullptr) return;
    SNN_LAUNCH(layernorm_input_grad_kernel, grid_of(rows, "layernorm rows"), kThreads, cs.stream,
               a.x[0], a.dy, a.dx[0], a.params + l.weight_offset, features, l.eps);
    check_launch("layernorm_input_grad kernel");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_layernorm{nullptr, nullptr, cu::layernorm_forward,
                                         cu::layernorm_backward};

}  // namespace snn
