// Max and average pooling on the CPU (no padding; floor output sizes). The
// n*c channel maps are split over the thread pool when there are enough.
#include "cpu/cpu_backend.h"
#include "cpu/multiversion.h"
#include "cpu/thread_pool.h"
#include "cpu/vec8.h"
#include "ops/dims.h"
#include "ops/op.h"

namespace snn {
namespace {

struct PoolJob {
    const PoolDims *d;
    int64_t maps;  // n * c
    const float *x;
    float *y;
    const float *dy;
    float *dx;
};

// Maps per worker below which splitting costs more than it saves.
constexpr int64_t kMinPoolWork = 1 << 15;

int32_t pool_workers(const PoolDims &d, int64_t maps) {
    const int64_t work = maps * d.hin * d.win;
    if (work < 2 * kMinPoolWork) return 1;
    int64_t w = work / kMinPoolWork;
    int32_t t = cpu_threads();
    return int32_t(w < t ? w : t);
}

// y = max over the window (NaN if the window holds one). Rows of outputs are
// built window element by window element, so the inner loop runs over
// contiguous (or evenly strided) columns and vectorises; the winner's index
// is found again in the backward pass, which has x and y.
SNN_MULTIVERSION
void maxpool_rows(const PoolDims &d, int64_t m0, int64_t m1, const float *x, float *y) {
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout;
    for (int64_t m = m0; m < m1; ++m) {
        const float *map = x + m * in_map;
        float *out = y + m * out_map;
        for (int64_t oy = 0; oy < d.hout; ++oy) {
            float *__restrict o = out + oy * d.wout;
            const float *first = map + oy * d.sh * d.win;
            for (int64_t ox = 0; ox < d.wout; ++ox) o[ox] = first[ox * d.sw];
            for (int64_t i = 0; i < d.kh; ++i)
                for (int64_t k = 0; k < d.kw; ++k) {
                    const float *__restrict src = first + i * d.win + k;
                    for (int64_t ox = 0; ox < d.wout; ++ox) {
                        const float e = src[ox * d.sw];
                        o[ox] = (e > o[ox] || e != e) ? e : o[ox];
                    }
                }
        }
    }
}

// The 2x2 window with stride 2, the common case: the same result as
// maxpool_rows (and the same NaN rule), 8 outputs at a time from vectors of
// the even and odd input columns. A row's last block overlaps the one before
// it (outputs are written, not accumulated, so writing some twice is
// harmless); rows narrower than 8 outputs take the scalar loop.
inline bool is_pool2(const PoolDims &d) { return d.kh == 2 && d.kw == 2 && d.sh == 2 && d.sw == 2; }

inline float max_or_nan(float v, float e) { return (e > v || e != e) ? e : v; }

// The even and the odd elements of the 16 floats from p.
#define SNN_DEINTERLEAVE(p, even, odd)                                         \
    do {                                                                       \
        const v8f snn_a_ = SNN_LOAD8(p), snn_b_ = SNN_LOAD8((p) + 8);          \
        (even) = __builtin_shufflevector(snn_a_, snn_b_, 0, 2, 4, 6, 8, 10, 12, 14); \
        (odd) = __builtin_shufflevector(snn_a_, snn_b_, 1, 3, 5, 7, 9, 11, 13, 15);  \
    } while (0)
// max_or_nan on 8 lanes (e, v: plain names, each read more than once)
#define SNN_MAX_OR_NAN8(v, e) (((e) > (v) || (e) != (e)) ? (e) : (v))

SNN_MULTIVERSION
void maxpool2_rows(const PoolDims &d, int64_t m0, int64_t m1, const float *x, float *y) {
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout, win = d.win, wout = d.wout;
    for (int64_t m = m0; m < m1; ++m)
        for (int64_t oy = 0; oy < d.hout; ++oy) {
            const float *r0 = x + m * in_map + 2 * oy * win;
            const float *r1 = r0 + win;
            float *o = y + m * out_map + oy * wout;
            if (wout < 8) {
                for (int64_t ox = 0; ox < wout; ++ox) {
                    float v = r0[2 * ox];
                    v = max_or_nan(v, r0[2 * ox + 1]);
                    v = max_or_nan(v, r1[2 * ox]);
                    o[ox] = max_or_nan(v, r1[2 * ox + 1]);
                }
                continue;
            }
            for (int64_t ox = 0;; ox += 8) {
                if (ox > wout - 8) ox = wout - 8;
                v8f a, b, c, e;
                SNN_DEINTERLEAVE(r0 + 2 * ox, a, b);
                SNN_DEINTERLEAVE(r1 + 2 * ox, c, e);
                const v8f ab = SNN_MAX_OR_NAN8(a, b), abc = SNN_MAX_OR_NAN8(ab, c);
                SNN_STORE8(o + ox, SNN_MAX_OR_NAN8(abc, e));
                if (ox == wout - 8) break;
            }
        }
}

void maxpool_forward_worker(void *ctx, int32_t worker, int32_t workers) {
    const PoolJob &j = *static_cast<const PoolJob *>(ctx);
    int64_t m0, m1;
    split_range(j.maps, workers, worker, &m0, &m1);
    if (is_pool2(*j.d) && !cpu_reference_kernels())
        maxpool2_rows(*j.d, m0, m1, j.x, j.y);
    else
        maxpool_rows(*j.d, m0, m1, j.x, j.y);
}

inline int same(float e, float v) { return int(e == v) | (int(e != e) & int(v != v)); }
// Lanes of -1 where e equals v or both are NaN, else 0 (plain names).
#define SNN_SAME8(e, v) (((e) == (v)) | (((e) != (e)) & ((v) != (v))))

// maxpool_backward_worker's routing for the 2x2 stride-2 window: the first
// of the four equal to the maximum takes dy (the first, when none is), the
// others 0; a last odd row or column, outside every window, is 0. Blocks of
// 8 outputs as in maxpool2_rows.
SNN_MULTIVERSION
void maxpool2_backward_rows(const PoolDims &d, int64_t m0, int64_t m1, const float *x, const float *y,
                            const float *dy, float *dx) {
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout, win = d.win, wout = d.wout;
    for (int64_t m = m0; m < m1; ++m) {
        for (int64_t oy = 0; oy < d.hout; ++oy) {
            const float *r0 = x + m * in_map + 2 * oy * win;
            const float *r1 = r0 + win;
            float *d0 = dx + m * in_map + 2 * oy * win;
            float *d1 = d0 + win;
            const float *v_row = y + m * out_map + oy * wout;
            const float *g_row = dy + m * out_map + oy * wout;
            if (wout < 8) {
                for (int64_t ox = 0; ox < wout; ++ox) {
                    const float v = v_row[ox], g = g_row[ox];
                    const int e00 = same(r0[2 * ox], v), e01 = same(r0[2 * ox + 1], v);
                    const int e10 = same(r1[2 * ox], v), e11 = same(r1[2 * ox + 1], v);
                    const int t01 = (e00 ^ 1) & e01, t10 = ((e00 | e01) ^ 1) & e10;
                    const int t11 = ((e00 | e01 | e10) ^ 1) & e11;
                    const int t00 = (t01 | t10 | t11) ^ 1;
                    d0[2 * ox] = t00 ? g : 0.0f;
                    d0[2 * ox + 1] = t01 ? g : 0.0f;
                    d1[2 * ox] = t10 ? g : 0.0f;
                    d1[2 * ox + 1] = t11 ? g : 0.0f;
                }
            } else {
                const v8f zero = {};
                for (int64_t ox = 0;; ox += 8) {
                    if (ox > wout - 8) ox = wout - 8;
                    const v8f v = SNN_LOAD8(v_row + ox), g = SNN_LOAD8(g_row + ox);
                    v8f a, b, c, e;
                    SNN_DEINTERLEAVE(r0 + 2 * ox, a, b);
                    SNN_DEINTERLEAVE(r1 + 2 * ox, c, e);
                    const v8i e00 = SNN_SAME8(a, v), e01 = SNN_SAME8(b, v), e10 = SNN_SAME8(c, v), e11 = SNN_SAME8(e, v);
                    const v8i t01 = ~e00 & e01, t10 = ~(e00 | e01) & e10, t11 = ~(e00 | e01 | e10) & e11;
                    const v8i t00 = ~(t01 | t10 | t11);
                    const v8f g00 = t00 ? g : zero, g01 = t01 ? g : zero;
                    const v8f g10 = t10 ? g : zero, g11 = t11 ? g : zero;
                    SNN_STORE8(d0 + 2 * ox, __builtin_shufflevector(g00, g01, 0, 8, 1, 9, 2, 10, 3, 11));
                    SNN_STORE8(d0 + 2 * ox + 8, __builtin_shufflevector(g00, g01, 4, 12, 5, 13, 6, 14, 7, 15));
                    SNN_STORE8(d1 + 2 * ox, __builtin_shufflevector(g10, g11, 0, 8, 1, 9, 2, 10, 3, 11));
                    SNN_STORE8(d1 + 2 * ox + 8, __builtin_shufflevector(g10, g11, 4, 12, 5, 13, 6, 14, 7, 15));
                    if (ox == wout - 8) break;
                }
            }
            for (int64_t ix = 2 * wout; ix < win; ++ix) d0[ix] = d1[ix] = 0.0f;
        }
        for (int64_t iy = 2 * d.hout; iy < d.hin; ++iy)
            for (int64_t ix = 0; ix < win; ++ix) dx[m * in_map + iy * win + ix] = 0.0f;
    }
}

void maxpool_backward_worker(void *ctx, int32_t worker, int32_t workers) {
    const PoolJob &j = *static_cast<const PoolJob *>(ctx);
    const PoolDims &d = *j.d;
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout;
    int64_t m0, m1;
    split_range(j.maps, workers, worker, &m0, &m1);
    if (is_pool2(d) && !cpu_reference_kernels()) {
        maxpool2_backward_rows(d, m0, m1, j.x, j.y, j.dy, j.dx);
        return;
    }
    for (int64_t m = m0; m < m1; ++m) {
        const float *map = j.x + m * in_map;
        const float *out = j.y + m * out_map;
        float *dmap = j.dx + m * in_map;
        for (int64_t i = 0; i < in_map; ++i) dmap[i] = 0.0f;
        const float *g = j.dy + m * out_map;
        for (int64_t oy = 0; oy < d.hout; ++oy)
            for (int64_t ox = 0; ox < d.wout; ++ox) {
                const float v = out[oy * d.wout + ox];
                const int64_t base = oy * d.sh * d.win + ox * d.sw;
                int64_t best = base;
                for (int64_t i = 0, found = 0; i < d.kh && !found; ++i)
                    for (int64_t k = 0; k < d.kw; ++k) {
                        const float e = map[base + i * d.win + k];
                        if (e == v || (e != e && v != v)) {
                            best = base + i * d.win + k;
                            found = 1;
                            break;
                        }
                    }
                dmap[best] += g[oy * d.wout + ox];
            }
    }
}

// y = mean over the kh x kw window
void avgpool_forward_worker(void *ctx, int32_t worker, int32_t workers) {
    const PoolJob &j = *static_cast<const PoolJob *>(ctx);
    const PoolDims &d = *j.d;
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout;
    const float scale = 1.0f / float(d.kh * d.kw);
    int64_t m0, m1;
    split_range(j.maps, workers, worker, &m0, &m1);
    for (int64_t m = m0; m < m1; ++m) {
        const float *map = j.x + m * in_map;
        float *out = j.y + m * out_map;
        for (int64_t oy = 0; oy < d.hout; ++oy)
            for (int64_t ox = 0; ox < d.wout; ++ox) {
                const float *base = map + oy * d.sh * d.win + ox * d.sw;
                float s = 0.0f;
                for (int64_t i = 0; i < d.kh; ++i)
                    for (int64_t k = 0; k < d.kw; ++k) s += base[i * d.win + k];
                out[oy * d.wout + ox] = s * scale;
            }
    }
}

// dx[window] += dy / (kh kw)
void avgpool_backward_worker(void *ctx, int32_t worker, int32_t workers) {
    const PoolJob &j = *static_cast<const PoolJob *>(ctx);
    const PoolDims &d = *j.d;
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout;
    const float scale = 1.0f / float(d.kh * d.kw);
    int64_t m0, m1;
    split_range(j.maps, workers, worker, &m0, &m1);
    for (int64_t m = m0; m < m1; ++m) {
        float *map = j.dx + m * in_map;
        for (int64_t i = 0; i < in_map; ++i) map[i] = 0.0f;
        const float *g = j.dy + m * out_map;
        for (int64_t oy = 0; oy < d.hout; ++oy)
            for (int64_t ox = 0; ox < d.wout; ++ox) {
                const float v = g[oy * d.wout + ox] * scale;
                float *base = map + oy * d.sh * d.win + ox * d.sw;
                for (int64_t i = 0; i < d.kh; ++i)
                    for (int64_t k = 0; k < d.kw; ++k) base[i * d.win + k] += v;
            }
    }
}

void maxpool_forward(const OpArgs &a) {
    const PoolDims d = pool_dims(*a.l);
    PoolJob job{&d, a.n * d.c, a.x[0], a.y, nullptr, nullptr};
    parallel_run(pool_workers(d, job.maps), maxpool_forward_worker, &job);
}

void maxpool_backward(const OpArgs &a) {
    if (!a.dx[0]) return;
    const PoolDims d = pool_dims(*a.l);
    PoolJob job{&d, a.n * d.c, a.x[0], a.y, a.dy, a.dx[0]};
    parallel_run(pool_workers(d, job.maps), maxpool_backward_worker, &job);
}

void avgpool_forward(const OpArgs &a) {
    const PoolDims d = pool_dims(*a.l);
    PoolJob job{&d, a.n * d.c, a.x[0], a.y, nullptr, nullptr};
    parallel_run(pool_workers(d, job.maps), avgpool_forward_worker, &job);
}

void avgpool_backward(const OpArgs &a) {
    if (!a.dx[0]) return;
    const PoolDims d = pool_dims(*a.l);
    PoolJob job{&d, a.n * d.c, nullptr, nullptr, a.dy, a.dx[0]};
    parallel_run(pool_workers(d, job.maps), avgpool_backward_worker, &job);
}

}  // namespace

extern const OpKernels cpu_op_maxpool{nullptr, nullptr, maxpool_forward, maxpool_backward};
extern const OpKernels cpu_op_avgpool{nullptr, nullptr, avgpool_forward, avgpool_backward};
// A window over the whole image (the descriptor sets it).
extern const OpKernels cpu_op_globalavgpool{nullptr, nullptr, avgpool_forward, avgpool_backward};

}  // namespace snn
