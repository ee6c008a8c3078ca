// The maxpool, avgpool and globalavgpool ops (ops/pool.cpp,
// ops/globalavgpool.cpp: an average pool whose window is the whole image)
// as plain kernels, no padding: one thread per output element forward, one
// thread per input element backward. The backward pass gathers from the
// windows covering each input element rather than scattering into it, so no
// atomics are needed and every element of dx is written, in a fixed order.
//
// Semantics match PyTorch: max picks the first maximum of a window in
// row-major order, and the first NaN wins over numbers; average divides by
// kh*kw. (The same rules as the CPU backend.)
#include <new>

#include "ops.h"

namespace snn {
namespace cu {
namespace {

struct PoolPlan {
    int32_t device;
    bool max;
    PoolDims dims;
    int64_t max_batch;
};

// Dimensions as the kernels read them.
struct Geometry {
    int hin, win, hout, wout, kh, kw, sh, sw;
};

// Offset within one channel map of the maximum of window (oh, ow).
__device__ __forceinline__ int window_argmax(const float *xc, const Geometry &g, int oh, int ow) {
    const int h0 = oh * g.sh, w0 = ow * g.sw;
    int best_at = h0 * g.win + w0;
    float best = -INFINITY;
    for (int a = 0; a < g.kh; ++a)
        for (int b = 0; b < g.kw; ++b) {
            const int at = (h0 + a) * g.win + (w0 + b);
            const float v = xc[at];
            if (v > best || (isnan(v) && !isnan(best))) {
                best = v;
                best_at = at;
            }
        }
    return best_at;
}

// The output rows (or columns) whose windows cover input row h:
// oh * s <= h < oh * s + k, clipped to [0, out).
__device__ __forceinline__ void covering(int h, int k, int s, int out, int *lo, int *hi) {
    *lo = h < k ? 0 : (h - k) / s + 1;
    *hi = h / s < out - 1 ? h / s : out - 1;
}

__global__ void maxpool_forward_kernel(const float *x, float *y, size_t total, Geometry g) {
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < total;
         o += (size_t)gridDim.x * blockDim.x) {
        const int ow = (int)(o % g.wout), oh = (int)(o / g.wout % g.hout);
        const size_t map = o / ((size_t)g.hout * g.wout);  // (sample, channel)
        const float *xc = x + map * g.hin * g.win;
        const int at = window_argmax(xc, g, oh, ow);
        y[o] = xc[at];
    }
}

// dx[h][w] = sum of dy over the windows whose maximum is (h, w).
__global__ void maxpool_backward_kernel(const float *x, const float *dy, float *dx, size_t total,
                                        Geometry g) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int w = (int)(e % g.win), h = (int)(e / g.win % g.hin);
        const size_t map = e / ((size_t)g.hin * g.win);
        const float *xc = x + map * g.hin * g.win;
        const float *dyc = dy + map * g.hout * g.wout;
        int oh_lo, oh_hi, ow_lo, ow_hi;
        covering(h, g.kh, g.sh, g.hout, &oh_lo, &oh_hi);
        covering(w, g.kw, g.sw, g.wout, &ow_lo, &ow_hi);
        float acc = 0.0f;
        for (int oh = oh_lo; oh <= oh_hi; ++oh)
            for (int ow = ow_lo; ow <= ow_hi; ++ow)
                if (window_argmax(xc, g, oh, ow) == h * g.win + w) acc += dyc[oh * g.wout + ow];
        dx[e] = acc;
    }
}

// The same when the windows tile the map (stride = window: each input
// element in at most one window), one thread per window instead of per
// input element: it finds the window's maximum once and writes the whole
// window of dx, 0 + dy at the maximum (the sum above, bit for bit) and 0
// elsewhere. The threads of the last window row and column also zero the
// input rows and columns no window covers.
__global__ void maxpool_backward_tiled_kernel(const float *x, const float *dy, float *dx, size_t total,
                                              Geometry g) {
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < total;
         o += (size_t)gridDim.x * blockDim.x) {
        const int ow = (int)(o % g.wout), oh = (int)(o / g.wout % g.hout);
        const size_t map = o / ((size_t)g.hout * g.wout);
        const float *xc = x + map * g.hin * g.win;
        float *dxc = dx + map * g.hin * g.win;
        const int best_at = window_argmax(xc, g, oh, ow);
        const float grad = 0.0f + dy[o];
        const int h0 = oh * g.kh, w0 = ow * g.kw;
        for (int a = 0; a < g.kh; ++a)
            for (int b = 0; b < g.kw; ++b) {
                const int at = (h0 + a) * g.win + (w0 + b);
                dxc[at] = at == best_at ? grad : 0.0f;
            }
        const int h_end = ow == g.wout - 1 && oh == g.hout - 1 ? g.hin : h0 + g.kh;
        if (ow == g.wout - 1)  // columns right of the last window, this band of rows (and below)
            for (int h = h0; h < h_end; ++h)
                for (int w = g.wout * g.kw; w < g.win; ++w) dxc[h * g.win + w] = 0.0f;
        if (oh == g.hout - 1)  // rows below the last window, this band of columns
            for (int h = g.hout * g.kh; h < g.hin; ++h)
                for (int w = w0; w < w0 + g.kw; ++w) dxc[h * g.win + w] = 0.0f;
    }
}

// y = (sum of the window) / (kh kw)
__global__ void avgpool_forward_kernel(const float *x, float *y, size_t total, Geometry g) {
    const float inv = 1.0f / (float)(g.kh * g.kw);
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < total;
         o += (size_t)gridDim.x * blockDim.x) {
        const int ow = (int)(o % g.wout), oh = (int)(o / g.wout % g.hout);
        const size_t map = o / ((size_t)g.hout * g.wout);
        const float *xc = x + map * g.hin * g.win + (size_t)(oh * g.sh) * g.win + ow * g.sw;
        float sum = 0.0f;
        for (int a = 0; a < g.kh; ++a)
            for (int b = 0; b < g.kw; ++b) sum += xc[a * g.win + b];
        y[o] = sum * inv;
    }
}

// dx[h][w] = sum over the windows covering (h, w) of dy / (kh kw)
__global__ void avgpool_backward_kernel(const float *dy, float *dx, size_t total, Geometry g) {
    const float inv = 1.0f / (float)(g.kh * g.kw);
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int w = (int)(e % g.win), h = (int)(e / g.win % g.hin);
        const size_t map = e / ((size_t)g.hin * g.win);
        const float *dyc = dy + map * g.hout * g.wout;
        int oh_lo, oh_hi, ow_lo, ow_hi;
        covering(h, g.kh, g.sh, g.hout, &oh_lo, &oh_hi);
        covering(w, g.kw, g.sw, g.wout, &ow_lo, &ow_hi);
        float acc = 0.0f;
        for (int oh = oh_lo; oh <= oh_hi; ++oh)
            for (int ow = ow_lo; ow <= ow_hi; ++ow) acc += dyc[oh * g.wout + ow] * inv;
        dx[e] = acc;
    }
}

// Pooling needs no descriptors; the plan records the layer so that calls
// can be checked against it.
void *pool_plan(Backend &be, Stream *s, const Layer &l, int64_t max_batch, bool, Precision,
                size_t *workspace_bytes) {
    cuda_backend(be).use(s);
    const PoolDims d = pool_dims(l);
    const int64_t limit = 0x7fffffff;
    if (d.hin * d.win > limit || d.kh < 1 || d.kw < 1 || d.sh < 1 || d.sw < 1 || d.hout < 1 ||
        d.wout < 1 || (d.hout - 1) * d.sh + d.kh > d.hin || (d.wout - 1) * d.sw + d.kw > d.win)
        raise(SNN_ERR_INTERNAL,
              strf("pool plan: inconsistent pooling %lldx%lld -> %lldx%lld (window %lldx%lld, "
                   "stride %lldx%lld)",
                   (long long)d.hin, (long long)d.win, (long long)d.hout, (long long)d.wout,
                   (long long)d.kh, (long long)d.kw, (long long)d.sh, (long long)d.sw));
    PoolPlan *p =
        new (std::nothrow) PoolPlan{be.device(), l.kind == OpKind::maxpool, d, max_batch};
    if (p == nullptr) raise(SNN_ERR_OUT_OF_MEMORY, "pool plan: out of host memory");
    *workspace_bytes = 0;
    return p;
}

void pool_plan_release(Backend &, void *plan) noexcept { delete static_cast<PoolPlan *>(plan); }

// The plan, checked against the call; returns the kernels' geometry.
Geometry prepare(const OpArgs &a, bool max, const PoolDims &d) {
    if (a.plan == nullptr) raise(SNN_ERR_INTERNAL, "pooling called without a plan");
    const PoolPlan &p = *static_cast<const PoolPlan *>(a.plan);
    if (p.device != a.be->device() || p.max != max || p.dims.c != d.c || p.dims.hin != d.hin ||
        p.dims.win != d.win || p.dims.hout != d.hout || p.dims.wout != d.wout)
        raise(SNN_ERR_INTERNAL, "pooling called with a plan made for another layer or GPU");
    if (a.n < 1 || a.n > p.max_batch)
        raise(SNN_ERR_INTERNAL, strf("pooling: batch %lld outside the planned 1..%lld",
                                     (long long)a.n, (long long)p.max_batch));
    return Geometry{(int)d.hin, (int)d.win, (int)d.hout, (int)d.wout,
                    (int)d.kh,  (int)d.kw,  (int)d.sh,   (int)d.sw};
}

void maxpool_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const PoolDims d = pool_dims(*a.l);
    Geometry g = prepare(a, true, d);
    size_t total = static_cast<size_t>(a.n * d.c * d.hout * d.wout);
    SNN_LAUNCH(maxpool_forward_kernel, blocks_for(total), kThreads, cs.stream, a.x[0], a.y, total,
               g);
    check_launch("maxpool_forward kernel");
}

// The maximum of each window is found again from x (the same function as
// forward), so nothing but the input is kept between the passes.
void maxpool_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const PoolDims d = pool_dims(*a.l);
    Geometry g = prepare(a, true, d);
    if (a.dx[0] == nullptr) return;
    if (g.sh == g.kh && g.sw == g.kw) {
        const size_t windows = static_cast<size_t>(a.n * d.c * d.hout * d.wout);
        SNN_LAUNCH(maxpool_backward_tiled_kernel, blocks_for(windows), kThreads, cs.stream, a.x[0], a.dy,
                   a.dx[0], windows, g);
        check_launch("maxpool_backward_tiled kernel");
        return;
    }
    size_t total = static_cast<size_t>(a.n * d.c * d.hin * d.win);
    SNN_LAUNCH(maxpool_backward_kernel, blocks_for(total), kThreads, cs.stream, a.x[0], a.dy,
               a.dx[0], total, g);
    check_launch("maxpool_backward kernel");
}

void avgpool_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const PoolDims d = pool_dims(*a.l);
    Geometry g = prepare(a, false, d);
    size_t total = static_cast<size_t>(a.n * d.c * d.hout * d.wout);
    SNN_LAUNCH(avgpool_forward_kernel, blocks_for(total), kThreads, cs.stream, a.x[0], a.y, total,
               g);
    check_launch("avgpool_forward kernel");
}

void avgpool_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const PoolDims d = pool_dims(*a.l);
    Geometry g = prepare(a, false, d);
    if (a.dx[0] == nullptr) return;
    size_t total = static_cast<size_t>(a.n * d.c * d.hin * d.win);
    SNN_LAUNCH(avgpool_backward_kernel, blocks_for(total), kThreads, cs.stream, a.dy, a.dx[0],
               total, g);
    check_launch("avgpool_backward kernel");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_maxpool{cu::pool_plan, cu::pool_plan_release, cu::maxpool_forward,
                                       cu::maxpool_backward};
extern const OpKernels cuda_op_avgpool{cu::pool_plan, cu::pool_plan_release, cu::avgpool_forward,
                                       cu::avgpool_backward};
// A window of the whole image (ops/globalavgpool.cpp sets kh, kw, sh, sw).
extern const OpKernels cuda_op_globalavgpool{cu::pool_plan, cu::pool_plan_release,
                                             cu::avgpool_forward, cu::avgpool_backward};

}  // namespace snn
