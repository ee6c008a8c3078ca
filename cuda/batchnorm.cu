// The batchnorm op (ops/batchnorm.cpp): per channel of an image (over the
// batch and the pixels) or per feature of a vector (over the batch),
//   y = (x - mean) * invstd * weight + bias,   invstd = 1 / sqrt(var + eps),
// with the batch's mean and biased variance in training mode (which also
// updates the running statistics in the state) and the running statistics
// in inference mode. aux keeps the mean and invstd used: [2][C].
//
// A channel's m = n * inner values (inner = h*w for images, 1 for vectors)
// are split into slices (block_reduce.h's slicing_for), one block each, so
// that a few channels of many values still fill the GPU. Each block adds
// its values as a fixed tree (block_sum) in double; with several slices the
// block sums go to the stream's scratch and every later block adds them in
// slice order. Nothing depends on timing: results are reproducible bit for
// bit. With one slice a channel is one block and one kernel does it all.
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

// Values of a channel per slice below which a channel is not split.
constexpr int64_t kSliceValues = 8192;

Slicing bn_slicing(const Channels &ch, int64_t n) {
    // Two partial sums per slice and channel.
    return slicing_for(n * ch.inner, ch.count, kSliceValues, kSumScratch, 2);
}

// The values [first, end) of channel c's slice s.
struct Slice {
    int64_t c, s, first, end;
};
__device__ __forceinline__ Slice slice_of(int64_t slices, int64_t length, int64_t m) {
    Slice sl;
    sl.c = blockIdx.x / slices;
    sl.s = blockIdx.x - sl.c * slices;
    sl.first = sl.s * length;
    sl.end = sl.first + length < m ? sl.first + length : m;
    return sl;
}

// Sum over slices of part[c * slices + s], in slice order (every thread the
// same value).
__device__ __forceinline__ double slices_total(const double *part, int64_t c, int64_t slices) {
    double t = 0.0;
    for (int64_t s = 0; s < slices; ++s) t += part[c * slices + s];
    return t;
}

// Training: mean = sum x / m, var = sum (x - mean)^2 / m (two passes),
//   running_mean = (1 - momentum) running_mean + momentum mean
//   running_var  = (1 - momentum) running_var + momentum var m / (m - 1)
//   num_batches_tracked += 1
// (the running statistics computed in double, as on the CPU)
// Inference: mean and var are the running statistics.
// Then aux = [mean, invstd] and y = (x - mean) * invstd * w + b.
__device__ void bn_finish_forward(const float *x, float *y, const float *w, const float *b, float *state,
                                  float *aux, int64_t channels, int64_t inner, int64_t m, double mean_d,
                                  double var, double eps, double momentum, int training, const Slice &sl) {
    const int64_t c = sl.c;
    float mean, invstd;
    if (training) {
        mean = (float)mean_d;
        invstd = norm_invstd(var, eps);
        if (threadIdx.x == 0 && sl.s == 0) {
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
    if (threadIdx.x == 0 && sl.s == 0) {
        aux[c] = mean;
        aux[channels + c] = invstd;
    }
    const float wc = w[c], bc = b[c];
    ChannelWalk walk(sl.first + threadIdx.x, channels, inner);
    for (int64_t e = sl.first + threadIdx.x; e < sl.end; e += kThreads, walk.next()) {
        const size_t k = walk.at(c);
        y[k] = norm_y(norm_xhat(x[k], mean, invstd), wc, bc);
    }
}

// One slice per channel: the whole forward pass in one kernel.
__global__ void batchnorm_forward_kernel(const float *x, float *y, const float *w, const float *b,
                                         float *state, float *aux, int64_t n, int64_t channels,
                                         int64_t inner, double eps, double momentum, int training) {
    __shared__ double buf[kThreads];
    const int64_t m = n * inner;
    const Slice sl = slice_of(1, m, m);
    double mean_d = 0.0, var = 0.0;
    if (training) {
        double sum = 0.0;
        ChannelWalk walk(threadIdx.x, channels, inner);
        for (int64_t e = threadIdx.x; e < m; e += kThreads, walk.next()) sum += x[walk.at(sl.c)];
        mean_d = block_sum(sum, buf) / (double)m;
        double squares = 0.0;
        ChannelWalk again(threadIdx.x, channels, inner);
        for (int64_t e = threadIdx.x; e < m; e += kThreads, again.next()) {
            const double d = (double)x[again.at(sl.c)] - mean_d;
            squares += d * d;
        }
        var = block_sum(squares, buf) / (double)m;
    }
    bn_finish_forward(x, y, w, b, state, aux, channels, inner, m, mean_d, var, eps, momentum, training, sl);
}

// Several slices, training, pass 1: part[c * slices + s] = sum of the slice.
__global__ void batchnorm_sum_kernel(const float *x, double *part, int64_t n, int64_t channels,
                                     int64_t inner, int64_t slices, int64_t length) {
    __shared__ double buf[kThreads];
    const Slice sl = slice_of(slices, length, n * inner);
    double sum = 0.0;
    ChannelWalk walk(sl.first + threadIdx.x, channels, inner);
    for (int64_t e = sl.first + threadIdx.x; e < sl.end; e += kThreads, walk.next()) sum += x[walk.at(sl.c)];
    sum = block_sum(sum, buf);
    if (threadIdx.x == 0) part[blockIdx.x] = sum;
}

// Pass 2: squares[c * slices + s] = sum of (x - mean)^2 over the slice, the
// mean from pass 1's sums.
__global__ void batchnorm_squares_kernel(const float *x, const double *sums, double *squares, int64_t n,
                                         int64_t channels, int64_t inner, int64_t slices, int64_t length) {
    __shared__ double buf[kThreads];
    const int64_t m = n * inner;
    const Slice sl = slice_of(slices, length, m);
    const double mean_d = slices_total(sums, sl.c, slices) / (double)m;
    double acc = 0.0;
    ChannelWalk walk(sl.first + threadIdx.x, channels, inner);
    for (int64_t e = sl.first + threadIdx.x; e < sl.end; e += kThreads, walk.next()) {
        const double d = (double)x[walk.at(sl.c)] - mean_d;
        acc += d * d;
    }
    acc = block_sum(acc, buf);
    if (threadIdx.x == 0) squares[blockIdx.x] = acc;
}

// Pass 3 (training: statistics from passes 1 and 2; inference: no pass
// before it): the running statistics, aux and y of the slice.
__global__ void batchnorm_apply_kernel(const float *x, float *y, const float *w, const float *b, float *state,
                                       float *aux, const double *sums, const double *squares, int64_t n,
                                       int64_t channels, int64_t inner, int64_t slices, int64_t length,
                                       double eps, double momentum, int training) {
    const int64_t m = n * inner;
    const Slice sl = slice_of(slices, length, m);
    double mean_d = 0.0, var = 0.0;
    if (training) {
        mean_d = slices_total(sums, sl.c, slices) / (double)m;
        var = slices_total(squares, sl.c, slices) / (double)m;
    }
    bn_finish_forward(x, y, w, b, state, aux, channels, inner, m, mean_d, var, eps, momentum, training, sl);
}

// With xhat = (x - mean) * invstd from aux (core/math.h's norm_*):
//   dweight = sum dy xhat, dbias = sum dy (written, not accumulated)
//   dx = invstd w (dy - sum dy / m - xhat sum dy xhat / m)   training
//   dx = dy (invstd w)                                       inference
// Every sum is read before any dx is written, and each thread writes only
// the elements it read, so dx may be dy's memory: with several slices, the
// sums are a kernel of their own that finishes before dx is written.
__device__ void bn_finish_backward(const float *x, const float *dy, float *dx, const float *w,
                                   const float *aux, float *dw, float *db, int64_t channels, int64_t inner,
                                   int64_t m, double sum_dy, double sum_dy_xhat, int training,
                                   const Slice &sl) {
    const int64_t c = sl.c;
    if (threadIdx.x == 0 && sl.s == 0) {
        dw[c] = (float)sum_dy_xhat;
        db[c] = (float)sum_dy;
    }
    if (dx == nullptr) return;
    const float mean = aux[c], invstd = aux[channels + c];
    const float scale = invstd * w[c];
    ChannelWalk walk(sl.first + threadIdx.x, channels, inner);
    if (training) {
        const NormGradRow r = norm_grad_row(sum_dy, sum_dy_xhat, (double)m);
        for (int64_t e = sl.first + threadIdx.x; e < sl.end; e += kThreads, walk.next()) {
            const size_t k = walk.at(c);
            dx[k] = norm_dx(r, scale, dy[k], norm_xhat(x[k], mean, invstd));
        }
    } else {
        for (int64_t e = sl.first + threadIdx.x; e < sl.end; e += kThreads, walk.next()) {
            const size_t k = walk.at(c);
            dx[k] = dy[k] * scale;
        }
    }
}

// The sums of dy and dy xhat over a slice (block_sum'd; every thread gets
// them).
__device__ void bn_grad_sums(const float *x, const float *dy, const float *aux, int64_t channels, int64_t inner,
                             const Slice &sl, double *buf, double *sum_dy, double *sum_dy_xhat) {
    const float mean = aux[sl.c], invstd = aux[channels + sl.c];
    double a = 0.0, b = 0.0;
    ChannelWalk walk(sl.first + threadIdx.x, channels, inner);
    for (int64_t e = sl.first + threadIdx.x; e < sl.end; e += kThreads, walk.next()) {
        const size_t k = walk.at(sl.c);
        const float xhat = norm_xhat(x[k], mean, invstd);
        a += dy[k];
        b += (double)dy[k] * (double)xhat;
    }
    *sum_dy = block_sum(a, buf);
    *sum_dy_xhat = block_sum(b, buf);
}

// One slice per channel: the whole backward pass in one kernel.
__global__ void batchnorm_backward_kernel(const float *x, const float *dy, float *dx,
                                          const float *w, const float *aux, float *dw, float *db,
                                          int64_t n, int64_t channels, int64_t inner,
                                          int training) {
    __shared__ double buf[kThreads];
    const int64_t m = n * inner;
    const Slice sl = slice_of(1, m, m);
    double sum_dy, sum_dy_xhat;
    bn_grad_sums(x, dy, aux, channels, inner, sl, buf, &sum_dy, &sum_dy_xhat);
    bn_finish_backward(x, dy, dx, w, aux, dw, db, channels, inner, m, sum_dy, sum_dy_xhat, training, sl);
}

// Several slices, pass 1: the sums of each slice.
__global__ void batchnorm_grad_sums_kernel(const float *x, const float *dy, const float *aux, double *part_dy,
                                           double *part_dy_xhat, int64_t n, int64_t channels, int64_t inner,
                                           int64_t slices, int64_t length) {
    __shared__ double buf[kThreads];
    const Slice sl = slice_of(slices, length, n * inner);
    double sum_dy, sum_dy_xhat;
    bn_grad_sums(x, dy, aux, channels, inner, sl, buf, &sum_dy, &sum_dy_xhat);
    if (threadIdx.x == 0) {
        part_dy[blockIdx.x] = sum_dy;
        part_dy_xhat[blockIdx.x] = sum_dy_xhat;
    }
}

// Pass 2: the parameter gradients and dx of the slice.
__global__ void batchnorm_grad_apply_kernel(const float *x, const float *dy, float *dx, const float *w,
                                            const float *aux, float *dw, float *db, const double *part_dy,
                                            const double *part_dy_xhat, int64_t n, int64_t channels,
                                            int64_t inner, int64_t slices, int64_t length, int training) {
    const int64_t m = n * inner;
    const Slice sl = slice_of(slices, length, m);
    const double sum_dy = slices_total(part_dy, sl.c, slices);
    const double sum_dy_xhat = slices_total(part_dy_xhat, sl.c, slices);
    bn_finish_backward(x, dy, dx, w, aux, dw, db, channels, inner, m, sum_dy, sum_dy_xhat, training, sl);
}

unsigned int bn_grid(const Channels &ch, const Slicing &sl) {
    return grid_of(ch.count * sl.slices, "batchnorm channels");
}

void batchnorm_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const Channels ch = channels_of(l);
    if (a.n <= 0 || ch.count <= 0) return;
    const float *w = a.params + l.weight_offset, *b = a.params + l.bias_offset;
    float *state = a.state + l.state_offset;
    const Slicing sl = bn_slicing(ch, a.n);
    if (sl.slices == 1) {
        SNN_LAUNCH(batchnorm_forward_kernel, bn_grid(ch, sl), kThreads, cs.stream, a.x[0], a.y, w, b, state,
                   a.aux, a.n, ch.count, ch.inner, l.eps, l.momentum, a.training ? 1 : 0);
        check_launch("batchnorm_forward kernel");
        return;
    }
    double *sums = cs.sums, *squares = cs.sums + ch.count * sl.slices;
    if (a.training) {
        SNN_LAUNCH(batchnorm_sum_kernel, bn_grid(ch, sl), kThreads, cs.stream, a.x[0], sums, a.n, ch.count,
                   ch.inner, sl.slices, sl.length);
        check_launch("batchnorm_sum kernel");
        SNN_LAUNCH(batchnorm_squares_kernel, bn_grid(ch, sl), kThreads, cs.stream, a.x[0], sums, squares, a.n,
                   ch.count, ch.inner, sl.slices, sl.length);
        check_launch("batchnorm_squares kernel");
    }
    SNN_LAUNCH(batchnorm_apply_kernel, bn_grid(ch, sl), kThreads, cs.stream, a.x[0], a.y, w, b, state, a.aux,
               sums, squares, a.n, ch.count, ch.inner, sl.slices, sl.length, l.eps, l.momentum,
               a.training ? 1 : 0);
    check_launch("batchnorm_apply kernel");
}

void batchnorm_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const Channels ch = channels_of(l);
    if (a.n <= 0 || ch.count <= 0) return;
    const float *w = a.params + l.weight_offset;
    float *dw = a.grads + l.weight_offset, *db = a.grads + l.bias_offset;
    const int training = a.training ? 1 : 0;
    const Slicing sl = bn_slicing(ch, a.n);
    if (sl.slices == 1) {
        SNN_LAUNCH(batchnorm_backward_kernel, bn_grid(ch, sl), kThreads, cs.stream, a.x[0], a.dy, a.dx[0], w,
                   a.aux, dw, db, a.n, ch.count, ch.inner, training);
        check_launch("batchnorm_backward kernel");
        return;
    }
    double *part_dy = cs.sums, *part_dy_xhat = cs.sums + ch.count * sl.slices;
    SNN_LAUNCH(batchnorm_grad_sums_kernel, bn_grid(ch, sl), kThreads, cs.stream, a.x[0], a.dy, a.aux, part_dy,
               part_dy_xhat, a.n, ch.count, ch.inner, sl.slices, sl.length);
    check_launch("batchnorm_grad_sums kernel");
    SNN_LAUNCH(batchnorm_grad_apply_kernel, bn_grid(ch, sl), kThreads, cs.stream, a.x[0], a.dy, a.dx[0], w,
               a.aux, dw, db, part_dy, part_dy_xhat, a.n, ch.count, ch.inner, sl.slices, sl.length, training);
    check_launch("batchnorm_grad_apply kernel");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_batchnorm{nullptr, nullptr, cu::batchnorm_forward,
                                         cu::batchnorm_backward};

}  // namespace snn
