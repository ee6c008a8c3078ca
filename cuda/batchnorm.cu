// The batchnorm op (ops/batchnorm.cpp): per channel of an image (over the
// batch and the pixels) or per feature of a vector (over the batch),
//   y = (x - mean) * invstd * weight + bias,   invstd = 1 / sqrt(var + eps),
// with the batch's mean and biased variance in training mode (which also
// updates the running statistics in the state) and the running statistics
// in inference mode. aux keeps the mean and invstd used: [2][C].
//
// One block per channel reads the channel's m = n * inner values (inner =
// h*w for images, 1 for vectors) and adds its sums as a fixed tree
// (block_sum) in double: the result never depends on timing.
#include "ops.h"

namespace snn {
namespace cu {
namespace {

struct Channels {
    int64_t count, inner;  // C, and the values of a channel per sample
};

Channels channels_of(const Layer &l) {
    if (l.in.is_image) return {l.in.c, l.in.h * l.in.w};
    return {l.in.size(), 1};
}

// Index of the e-th value of channel c (sample e / inner, pixel e % inner).
__device__ __forceinline__ size_t at(int64_t e, int64_t c, int64_t channels, int64_t inner) {
    const int64_t i = e / inner, r = e - i * inner;
    return static_cast<size_t>((i * channels + c) * inner + r);
}

// Training: mean = sum x / m, var = sum (x - mean)^2 / m (two passes),
//   running_mean = (1 - momentum) running_mean + momentum mean
//   running_var  = (1 - momentum) running_var + momentum var m / (m - 1)
//   num_batches_tracked += 1
// (the running statistics computed in double, as on the CPU)
// Inference: mean and var are the running statistics.
// Then aux = [mean, invstd] and y = (x - mean) * invstd * w + b.
__global__ void batchnorm_forward_kernel(const float *x, float *y, const float *w, const float *b,
                                         float *state, float *aux, int64_t n, int64_t channels,
                                         int64_t inner, double eps, double momentum, int training) {
    __shared__ double buf[kThreads];
    const int64_t c = blockIdx.x;
    const int64_t m = n * inner;
    float mean, invstd;
    if (training) {
        double sum = 0.0;
        for (int64_t e = threadIdx.x; e < m; e += kThreads) sum += x[at(e, c, channels, inner)];
        const double mean_d = block_sum(sum, buf) / (double)m;
        double squares = 0.0;
        for (int64_t e = threadIdx.x; e < m; e += kThreads) {
            const double d = (double)x[at(e, c, channels, inner)] - mean_d;
            squares += d * d;
        }
        const double var = block_sum(squares, buf) / (double)m;
        mean = (float)mean_d;
        invstd = norm_invstd(var, eps);
        if (threadIdx.x == 0) {
            float *running_mean = state + c, *running_var = state + channels + c;
            const double unbiased = var * (double)m / (double)(m - 1);
            *running_mean = (float)((1.0 - momentum) * *running_mean + momentum * mean_d);
            *running_var = (float)((1.0 - momentum) * *running_var + momentum * unbiased);
            if (c == 0) state[2 * channels] += 1.0f;
        }
    } else {
        mean = state[c];
        invstd = norm_invstd((double)state[channels + c], eps);
    }
    if (threadIdx.x == 0) {
        aux[c] = mean;
        aux[channels + c] = invstd;
    }
    const float wc = w[c], bc = b[c];
    for (int64_t e = threadIdx.x; e < m; e += kThreads) {
        const size_t k = at(e, c, channels, inner);
        y[k] = norm_y(norm_xhat(x[k], mean, invstd), wc, bc);
    }
}

// With xhat = (x - mean) * invstd from aux (engine/math.h's norm_*):
//   dweight = sum dy xhat, dbias = sum dy (written, not accumulated)
//   dx = invstd w (dy - sum dy / m - xhat sum dy xhat / m)   training
//   dx = dy (invstd w)                                       inference
// Every sum is read before any dx is written, and each thread writes only
// the elements it read, so dx may be dy's memory.
__global__ void batchnorm_backward_kernel(const float *x, const float *dy, float *dx,
                                          const float *w, const float *aux, float *dw, float *db,
                                          int64_t n, int64_t channels, int64_t inner,
                                          int training) {
    __shared__ double buf[kThreads];
    const int64_t c = blockIdx.x;
    const int64_t m = n * inner;
    const float mean = aux[c], invstd = aux[channels + c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t e = threadIdx.x; e < m; e += kThreads) {
        const size_t k = at(e, c, channels, inner);
        const float xhat = norm_xhat(x[k], mean, invstd);
        sum_dy += dy[k];
        sum_dy_xhat += (double)dy[k] * (double)xhat;
    }
    sum_dy = block_sum(sum_dy, buf);
    sum_dy_xhat = block_sum(sum_dy_xhat, buf);
    if (threadIdx.x == 0) {
        dw[c] = (float)sum_dy_xhat;
        db[c] = (float)sum_dy;
    }
    if (dx == nullptr) return;
    const float scale = invstd * w[c];
    if (training) {
        const NormGradRow r = norm_grad_row(sum_dy, sum_dy_xhat, (double)m);
        for (int64_t e = threadIdx.x; e < m; e += kThreads) {
            const size_t k = at(e, c, channels, inner);
            dx[k] = norm_dx(r, scale, dy[k], norm_xhat(x[k], mean, invstd));
        }
    } else {
        for (int64_t e = threadIdx.x; e < m; e += kThreads) {
            const size_t k = at(e, c, channels, inner);
            dx[k] = dy[k] * scale;
        }
    }
}

void batchnorm_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const Channels ch = channels_of(l);
    if (a.n <= 0 || ch.count <= 0) return;
    SNN_LAUNCH(batchnorm_forward_kernel, grid_of(ch.count, "batchnorm channels"), kThreads,
               cs.stream, a.x[0], a.y, a.params + l.weight_offset, a.params + l.bias_offset,
               a.state + l.state_offset, a.aux, a.n, ch.count, ch.inner, l.eps, l.momentum,
               a.training ? 1 : 0);
    check_launch("batchnorm_forward kernel");
}

void batchnorm_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const Channels ch = channels_of(l);
    if (a.n <= 0 || ch.count <= 0) return;
    SNN_LAUNCH(batchnorm_backward_kernel, grid_of(ch.count, "batchnorm channels"), kThreads,
               cs.stream, a.x[0], a.dy, a.dx[0], a.params + l.weight_offset, a.aux,
               a.grads + l.weight_offset, a.grads + l.bias_offset, a.n, ch.count, ch.inner,
               a.training ? 1 : 0);
    check_launch("batchnorm_backward kernel");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_batchnorm{nullptr, nullptr, cu::batchnorm_forward,
                                         cu::batchnorm_backward};

}  // namespace snn
