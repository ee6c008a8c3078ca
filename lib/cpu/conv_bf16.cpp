// Convolution at bf16 on the CPU: im2col lowering and gemm_bf16 (operands
// rounded to bf16, float32 sums), the products of autocast's convolution.
// A chunk of images is lowered at once into col[K][nb*P] (K = cin*kh*kw,
// P = hout*wout), so one product covers the chunk:
//   forward   Z[cout][nb*P] = W[cout][K] col
//   backward  dW += dZ col^T ; dcol = W^T dZ, then col2im
// Chunks are dealt round-robin over the workers, each with its own slot of
// the workspace (col, Z, the product's packing); each worker's products run
// on its own thread, so results depend on the thread count only through the
// order in which the workers' weight gradients are summed (fixed for a
// given count).
#include "cpu/conv_bf16.h"

#include <algorithm>
#include <new>

#include "common/error.h"
#include "cpu/activation.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm_bf16.h"
#include "cpu/thread_pool.h"
#include "ops/dims.h"

namespace snn {
namespace {

// Lowered columns of one chunk kept under this many floats.
constexpr int64_t kColBudget = int64_t(1) << 20;

struct Plan {
    int64_t chunk;    // images lowered per product
    int32_t workers;  // workspace slots planned
    size_t slot;      // bytes per worker: col, Z, the packing
    size_t params;    // floats of dW + db summed per extra worker
};

int64_t taps(const ConvDims &d) { return d.cin * d.kh * d.kw; }

// Output columns ox whose input column ox*sw - pw + j lies in [0, win): [*lo, *hi).
void valid_columns(const ConvDims &d, int64_t j, int64_t *lo, int64_t *hi) {
    const int64_t off = j - d.pw;
    const int64_t first = off >= 0 ? 0 : (-off + d.sw - 1) / d.sw;
    const int64_t last = d.win - off <= 0 ? 0 : (d.win - off + d.sw - 1) / d.sw;
    *lo = std::min(first, d.wout);
    *hi = std::max(*lo, std::min(last, d.wout));
}

// col[(c*kh + i)*kw + j][img*P + oy*wout + ox] = x[img][c][oy*sh - ph + i][ox*sw - pw + j], 0 outside
void im2col(const ConvDims &d, int64_t nb, const float *x, float *col) {
    const int64_t P = d.hout * d.wout, ld = nb * P, in_map = d.hin * d.win;
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
                float *row = col + ((c * d.kh + i) * d.kw + j) * ld;
                int64_t lo, hi;
                valid_columns(d, j, &lo, &hi);
                for (int64_t img = 0; img < nb; ++img)
                    for (int64_t oy = 0; oy < d.hout; ++oy) {
                        const int64_t iy = oy * d.sh - d.ph + i;
                        float *o = row + img * P + oy * d.wout;
                        if (iy < 0 || iy >= d.hin) {
                            std::fill(o, o + d.wout, 0.0f);
                            continue;
                        }
                        const float *src = x + (img * d.cin + c) * in_map + iy * d.win + j - d.pw;
                        std::fill(o, o + lo, 0.0f);
                        for (int64_t ox = lo; ox < hi; ++ox) o[ox] = src[ox * d.sw];
                        std::fill(o + hi, o + d.wout, 0.0f);
                    }
            }
}

// The adjoint of im2col: dx (zeroed first) += col at every place an input
// value was copied to.
void col2im(const ConvDims &d, int64_t nb, const float *col, float *dx) {
    const int64_t P = d.hout * d.wout, ld = nb * P, in_map = d.hin * d.win;
    std::fill(dx, dx + nb * d.cin * in_map, 0.0f);
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
                const float *row = col + ((c * d.kh + i) * d.kw + j) * ld;
                int64_t lo, hi;
                valid_columns(d, j, &lo, &hi);
                for (int64_t img = 0; img < nb; ++img)
                    for (int64_t oy = 0; oy < d.hout; ++oy) {
                        const int64_t iy = oy * d.sh - d.ph + i;
                        if (iy < 0 || iy >= d.hin) continue;
                        float *dst = dx + (img * d.cin + c) * in_map + iy * d.win + j - d.pw;
                        const float *o = row + img * P + oy * d.wout;
                        for (int64_t ox = lo; ox < hi; ++ox) dst[ox * d.sw] += o[ox];
                    }
            }
}

struct Job {
    const Plan *plan;
    const ConvDims *d;
    int64_t n, chunk;
    const float *x, *w, *b, *y;
    float *out, *dy, *dw, *db, *dx;
    char *workspace;
    float *pre;  // z kept for gelu and silu, or null
};

// A worker's slot: col [K][chunk*P], Z [cout][chunk*P], then the packing.
struct Slot {
    float *col, *z;
    void *pack;
};
Slot slot_of(const Job &j, int32_t worker) {
    const ConvDims &d = *j.d;
    const int64_t P = d.hout * d.wout;
    char *base = j.workspace + size_t(worker) * j.plan->slot;
    float *col = reinterpret_cast<float *>(base);
    float *z = col + taps(d) * j.plan->chunk * P;
    return {col, z, z + d.cout * j.plan->chunk * P};
}

// Per chunk: Z = W col ; out[img][co][p] = act(Z[co][img*P + p] + b[co]) (z kept for gelu and silu)
void forward_worker(void *ctx, int32_t worker, int32_t workers) {
    const Job &j = *static_cast<const Job *>(ctx);
    const ConvDims &d = *j.d;
    const int64_t K = taps(d), P = d.hout * d.wout;
    const Slot s = slot_of(j, worker);
    for (int64_t i0 = worker * j.chunk; i0 < j.n; i0 += workers * j.chunk) {
        const int64_t nb = std::min(j.chunk, j.n - i0), ld = nb * P;
        im2col(d, nb, j.x + i0 * d.cin * d.hin * d.win, s.col);
        gemm_bf16(false, false, d.cout, ld, K, j.w, K, s.col, ld, s.z, ld, false, s.pack);
        for (int64_t img = 0; img < nb; ++img)
            for (int64_t co = 0; co < d.cout; ++co) {
                const float *src = s.z + co * ld + img * P;
                const int64_t at = ((i0 + img) * d.cout + co) * P;
                const float bias = d.bias ? j.b[co] : 0.0f;
                if (j.pre) {
                    activate_span(Act::identity, src, bias, j.pre + at, P);
                    activate_span(d.act, j.pre + at, 0.0f, j.out + at, P);
                } else {
                    activate_span(d.act, src, bias, j.out + at, P);
                }
            }
    }
}

// Per chunk: dZ = dy act'(y or z) gathered to [cout][nb*P] ; db += row sums
// of dZ ; dW += dZ col^T ; dx = col2im(W^T dZ). Worker 0 sums into dw and db,
// the others into their own slots.
void backward_worker(void *ctx, int32_t worker, int32_t workers) {
    const Job &j = *static_cast<const Job *>(ctx);
    const ConvDims &d = *j.d;
    const int64_t K = taps(d), P = d.hout * d.wout, in_size = d.cin * d.hin * d.win;
    const Slot s = slot_of(j, worker);
    float *dw = j.dw, *db = j.db;
    if (worker > 0) {
        dw = reinterpret_cast<float *>(j.workspace + size_t(j.plan->workers) * j.plan->slot) +
             size_t(worker - 1) * j.plan->params;
        db = dw + d.cout * K;
    }
    std::fill(dw, dw + d.cout * K, 0.0f);
    if (d.bias) std::fill(db, db + d.cout, 0.0f);
    for (int64_t i0 = worker * j.chunk; i0 < j.n; i0 += workers * j.chunk) {
        const int64_t nb = std::min(j.chunk, j.n - i0), ld = nb * P;
        for (int64_t img = 0; img < nb; ++img)
            for (int64_t co = 0; co < d.cout; ++co) {
                const int64_t at = ((i0 + img) * d.cout + co) * P;
                derivative_span(d.act, j.dy + at, (j.pre ? j.pre : j.y) + at, s.z + co * ld + img * P, P);
            }
        if (d.bias)
            for (int64_t co = 0; co < d.cout; ++co) db[co] += sum_span(s.z + co * ld, ld);
        im2col(d, nb, j.x + i0 * in_size, s.col);
        gemm_bf16(false, true, d.cout, K, ld, s.z, ld, s.col, ld, dw, K, true, s.pack);
        if (!j.dx) continue;
        gemm_bf16(true, false, K, ld, d.cout, j.w, K, s.z, ld, s.col, ld, false, s.pack);
        col2im(d, nb, s.col, j.dx + i0 * in_size);
    }
}

int32_t workers_for(const Plan &p, int64_t n) {
    const int64_t chunks = (n + p.chunk - 1) / p.chunk;
    return int32_t(std::max<int64_t>(1, std::min<int64_t>({int64_t(cpu_threads()), int64_t(p.workers), chunks})));
}

// The chunk that deals n images evenly over the workers (conv.cpp's rule):
// as few rounds as the planned chunk allows, the images split equally.
int64_t balanced_chunk(const Plan &p, int64_t n, int32_t workers) {
    const int64_t per_round = int64_t(workers) * p.chunk;
    const int64_t rounds = (n + per_round - 1) / per_round;
    return std::max<int64_t>(1, (n + workers * rounds - 1) / (workers * rounds));
}

}  // namespace

void *conv_bf16_plan(const Layer &l, int64_t max_batch, bool backward, size_t *workspace_bytes) {
    const ConvDims d = conv_dims(l);
    const int64_t K = taps(d), P = d.hout * d.wout;
    const int32_t workers = std::max<int32_t>(1, std::min<int64_t>(cpu_threads(), max_batch));
    int64_t chunk = std::max<int64_t>(1, kColBudget / std::max<int64_t>(1, K * P));
    chunk = std::min(chunk, (max_batch + workers - 1) / workers);
    const int64_t ld = chunk * P;
    size_t pack = gemm_bf16_bytes(d.cout, ld, K);
    if (backward) pack = std::max({pack, gemm_bf16_bytes(d.cout, K, ld), gemm_bf16_bytes(K, ld, d.cout)});
    const size_t slot = size_t((K + d.cout) * ld) * sizeof(float) + pack;
    Plan *p = new (std::nothrow) Plan{chunk, workers, slot, size_t(d.cout * K + d.cout)};
    if (!p) fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory");
    *workspace_bytes = size_t(workers) * slot + (backward ? size_t(workers - 1) * p->params * sizeof(float) : 0);
    return p;
}

void conv_bf16_release(void *plan) noexcept { delete static_cast<Plan *>(plan); }

void conv_bf16_forward(const OpArgs &a, const void *plan) {
    const ConvDims d = conv_dims(*a.l);
    const Plan &p = *static_cast<const Plan *>(plan);
    const int32_t workers = workers_for(p, a.n);
    Job job{&p, &d, a.n, balanced_chunk(p, a.n, workers), a.x[0], a.params + a.l->weight_offset,
            a.params + a.l->bias_offset, nullptr, a.y, nullptr, nullptr, nullptr, nullptr,
            static_cast<char *>(a.workspace), act_uses_input(d.act) ? a.aux : nullptr};
    parallel_run(workers, forward_worker, &job);
}

void conv_bf16_backward(const OpArgs &a, const void *plan) {
    const ConvDims d = conv_dims(*a.l);
    const Plan &p = *static_cast<const Plan *>(plan);
    float *dw = a.grads + a.l->weight_offset, *db = a.grads + a.l->bias_offset;
    const int32_t workers = workers_for(p, a.n);
    Job job{&p, &d, a.n, balanced_chunk(p, a.n, workers), a.x[0], a.params + a.l->weight_offset, nullptr, a.y,
            nullptr, a.dy, dw, db, a.dx[0], static_cast<char *>(a.workspace),
            act_uses_input(d.act) ? a.aux : nullptr};
    parallel_run(workers, backward_worker, &job);
    // The other workers' partial gradients into worker 0's, in order.
    const size_t params = size_t(d.cout * taps(d));
    for (int32_t k = 1; k < workers; ++k) {
        const float *part = reinterpret_cast<const float *>(job.workspace + size_t(p.workers) * p.slot) +
                            size_t(k - 1) * p.params;
        for (size_t i = 0; i < params; ++i) dw[i] += part[i];
        if (d.bias)
            for (int64_t co = 0; co < d.cout; ++co) db[co] += part[params + size_t(co)];
    }
}

}  // namespace snn
