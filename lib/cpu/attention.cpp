// Multi-head self-attention on the CPU (ops/attention.cpp). Per sample the
// in-projection qkv [T][3E] (Q, K, V of a step side by side, so head h's Q
// is the columns h*D .. h*D + D - 1 with leading dimension 3E, D = E/H), the
// probabilities P [H][T][T] and the context C [T][E] are kept in aux.
//
// The projections are one product over all n*T steps; the scores and the
// context are small products per (sample, head), which the workers share.
// At bf16 every product takes gemm_bf16 (gemm_at), its packing planned in
// the workspace: one region for the projections, one per worker for the
// per-head products.
#include <algorithm>
#include <cmath>
#include <new>

#include "common/error.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm_bf16.h"
#include "cpu/multiversion.h"
#include "cpu/reduce.h"
#include "cpu/thread_pool.h"
#include "core/math.h"
#include "ops/op.h"

namespace snn {
namespace {

struct Dims {
    int64_t t, e, h, d;  // steps, features, heads, features per head
    float scale;         // 1 / sqrt(d)
    bool causal;
};

Dims dims_of(const Layer &l) {
    const int64_t d = l.in.c / l.heads;
    return {l.in.h, l.in.c, l.heads, d, float(1.0 / std::sqrt(double(d))), l.causal};
}

// Where a node's kept values and parameters lie.
struct View {
    float *qkv, *p, *ctx;                             // aux: [n][T][3E], [n][H][T][T], [n][T][E]
    const float *w_in, *b_in, *w_out, *b_out;          // parameters
};

View view_of(const OpArgs &a, const Dims &d) {
    const float *w = a.params + a.l->weight_offset;
    const size_t rows = size_t(a.n * d.t);
    return {a.aux, a.aux + rows * size_t(3 * d.e), a.aux + rows * size_t(3 * d.e) + size_t(a.n * d.h * d.t * d.t),
            w, w + 3 * d.e * d.e, w + 3 * d.e * d.e + 3 * d.e, w + 4 * d.e * d.e + 3 * d.e};
}

// Row t of a sample's scores s [T] in place: p_j = softmax_j(scale * s) over
// the keys it sees, 0 for the others. Sums in 8 interleaved partial sums
// (cpu/reduce.h), so the loops vectorise.
SNN_MULTIVERSION
void masked_softmax_row(float *s, int64_t keys, int64_t steps, float scale) {
    for (int64_t j = 0; j < keys; ++j) s[j] = scale * s[j];
    float most = s[0];
    for (int64_t j = 1; j < keys; ++j) most = s[j] > most ? s[j] : most;
    for (int64_t j = 0; j < keys; ++j) s[j] = softmax_exp(s[j], most);
    const float total = lane_sum<float, 8>(keys, [s](int64_t j) { return s[j]; });
    for (int64_t j = 0; j < keys; ++j) s[j] = softmax_y(s[j], total);
    for (int64_t j = keys; j < steps; ++j) s[j] = 0.0f;
}

// Row t of dP [T] in place: ds = scale * dz (core/math.h attention_dz),
// 0 at masked keys.
SNN_MULTIVERSION
void masked_softmax_row_grad(const float *p, float *dp, int64_t keys, int64_t steps, float scale) {
    int64_t m = 0;
    for (int64_t j = 1; j < keys; ++j) m = p[j] > p[m] ? j : m;
    const float pivot = dp[m];
    const float rest = lane_sum<float, 8>(keys, [p, dp, pivot](int64_t j) { return p[j] * (dp[j] - pivot); });
    for (int64_t j = 0; j < keys; ++j) dp[j] = scale * attention_dz(p[j], dp[j], pivot, rest);
    for (int64_t j = keys; j < steps; ++j) dp[j] = 0.0f;
}

int64_t length_of(const int32_t *lengths, int64_t sample, int64_t steps) {
    return lengths ? int64_t(lengths[sample]) : steps;
}

struct Job {
    const Dims *d;
    int64_t n;
    const int32_t *lengths;
    View v;
    float *dctx, *dqkv;  // backward: dL/dC [n][T][E], dL/dqkv [n][T][3E]
    float *dp;           // backward: [T][T] per worker
    Precision precision;
    char *pack;          // at bf16: item_pack_bytes per worker
};

// Packing of one per-head product at bf16 (the largest: [T][T] by D or
// [T][D] by T).
size_t item_pack_bytes(const Dims &d) { return std::max(gemm_bf16_bytes(d.t, d.t, d.d), gemm_bf16_bytes(d.t, d.d, d.t)); }

// Items (sample, head) are split evenly over the workers. Keys at and past
// a sample's length get probability 0, so the products of an item run over
// its first `length` keys only (rows of K and V, columns of S and P); the
// softmax passes write the zeros of the others.
// Forward of item (s, h): S = Q_h K_h^T ; P = masked softmax(scale S) ; C_h = P V_h
void forward_worker(void *ctx, int32_t worker, int32_t workers) {
    const Job &j = *static_cast<const Job *>(ctx);
    const Dims &d = *j.d;
    const int64_t ld = 3 * d.e;
    void *pack = j.pack ? j.pack + size_t(worker) * item_pack_bytes(d) : nullptr;
    int64_t b, e;
    split_range(j.n * d.h, workers, worker, &b, &e);
    for (int64_t item = b; item < e; ++item) {
        const int64_t s = item / d.h, h = item % d.h, length = length_of(j.lengths, s, d.t);
        const float *q = j.v.qkv + s * d.t * ld + h * d.d, *k = q + d.e, *v = q + 2 * d.e;
        float *p = j.v.p + item * d.t * d.t;
        gemm_at(j.precision, false, true, d.t, length, d.d, q, ld, k, ld, p, d.t, false, pack);
        for (int64_t t = 0; t < d.t; ++t)
            masked_softmax_row(p + t * d.t, attention_keys(t, length, d.t, d.causal), d.t, d.scale);
        gemm_at(j.precision, false, false, d.t, d.d, length, p, d.t, v, ld, j.v.ctx + s * d.t * d.e + h * d.d, d.e,
                false, pack);
    }
}

// Zeroes rows [from, T) of an item's block [T][D] with leading dimension ld.
void zero_rows(float *x, int64_t from, const Dims &d, int64_t ld) {
    for (int64_t t = from; t < d.t; ++t)
        for (int64_t c = 0; c < d.d; ++c) x[t * ld + c] = 0.0f;
}

// Backward of item (s, h), given dC:
//   dP = dC_h V_h^T ; dV_h = P^T dC_h ; dS = scale P (dP - rowsum(dP P)) about a pivot
//   dQ_h = dS K_h ; dK_h = dS^T Q_h   (dK and dV 0 at padded keys)
void backward_worker(void *ctx, int32_t worker, int32_t workers) {
    const Job &j = *static_cast<const Job *>(ctx);
    const Dims &d = *j.d;
    const int64_t ld = 3 * d.e;
    float *dp = j.dp + size_t(worker) * size_t(d.t * d.t);
    void *pack = j.pack ? j.pack + size_t(worker) * item_pack_bytes(d) : nullptr;
    int64_t b, e;
    split_range(j.n * d.h, workers, worker, &b, &e);
    for (int64_t item = b; item < e; ++item) {
        const int64_t s = item / d.h, h = item % d.h, length = length_of(j.lengths, s, d.t);
        const float *q = j.v.qkv + s * d.t * ld + h * d.d, *k = q + d.e, *v = q + 2 * d.e;
        const float *p = j.v.p + item * d.t * d.t, *dc = j.dctx + s * d.t * d.e + h * d.d;
        float *dq = j.dqkv + s * d.t * ld + h * d.d, *dk = dq + d.e, *dv = dq + 2 * d.e;
        gemm_at(j.precision, false, true, d.t, length, d.d, dc, d.e, v, ld, dp, d.t, false, pack);
        gemm_at(j.precision, true, false, length, d.d, d.t, p, d.t, dc, d.e, dv, ld, false, pack);
        zero_rows(dv, length, d, ld);
        for (int64_t t = 0; t < d.t; ++t)
            masked_softmax_row_grad(p + t * d.t, dp + t * d.t, attention_keys(t, length, d.t, d.causal), d.t,
                                    d.scale);
        gemm_at(j.precision, false, false, d.t, d.d, length, dp, d.t, k, ld, dq, ld, false, pack);
        gemm_at(j.precision, true, false, length, d.d, d.t, dp, d.t, q, ld, dk, ld, false, pack);
        zero_rows(dk, length, d, ld);
    }
}

struct Plan {
    int32_t workers;  // [T][T] slots planned for dP
};

// Below this many multiply-adds over all items, one thread does the work
// (as the CPU backend's products: cpu_backend.cpp).
constexpr int64_t kParallelItems = 512 * 1024;

int32_t workers_for(const Plan &p, const Dims &d, int64_t n) {
    if (n * d.h * 2 * d.t * d.t * d.d < kParallelItems) return 1;
    return int32_t(std::max<int64_t>(1, std::min<int64_t>({int64_t(cpu_threads()), int64_t(p.workers), n * d.h})));
}

// Floats of the backward workspace's own part: dC [n][T][E], dqkv
// [n][T][3E], then dP per worker.
size_t backward_floats(const Dims &d, int64_t n, int32_t workers) {
    return size_t(n * d.t * 4 * d.e) + size_t(workers) * size_t(d.t * d.t);
}

// Packing of the projections' products at bf16 over n samples.
size_t projection_pack_bytes(const Dims &d, int64_t n, bool backward) {
    const int64_t rows = n * d.t, e = d.e;
    size_t bytes = std::max(gemm_bf16_bytes(rows, 3 * e, e), gemm_bf16_bytes(rows, e, e));
    if (backward)
        bytes = std::max({bytes, gemm_bf16_bytes(e, e, rows), gemm_bf16_bytes(3 * e, e, rows),
                          gemm_bf16_bytes(rows, e, 3 * e)});
    return bytes;
}

// Workspace: backward's own part, then at bf16 the packing of the
// projections and one region per worker for the per-head products.
void *plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision precision,
           size_t *workspace_bytes) {
    const Dims d = dims_of(l);
    Plan *p = new (std::nothrow) Plan{std::max<int32_t>(1, int32_t(std::min<int64_t>(cpu_threads(), max_batch * d.h)))};
    if (!p) fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory");
    *workspace_bytes = backward ? backward_floats(d, max_batch, p->workers) * sizeof(float) : 0;
    if (precision == Precision::bf16)
        *workspace_bytes += projection_pack_bytes(d, max_batch, backward) + size_t(p->workers) * item_pack_bytes(d);
    return p;
}

// The packing regions at bf16 (null otherwise) after `used` bytes of the
// workspace: the projections', then the per-head products'.
char *projection_pack(const OpArgs &a, size_t used) {
    return a.precision == Precision::bf16 ? static_cast<char *>(a.workspace) + used : nullptr;
}

void release(Backend &, void *plan) { delete static_cast<Plan *>(plan); }

// Adds b to each of rows rows of y [rows][cols].
void add_bias_rows(float *y, const float *b, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) y[r * cols + c] += b[c];
}

// db[c] = sum over the rows of g [rows][cols], in row order.
void column_sums(float *db, const float *g, int64_t rows, int64_t cols) {
    for (int64_t c = 0; c < cols; ++c) db[c] = 0.0f;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) db[c] += g[r * cols + c];
}

// qkv = x W_in^T + b_in ; per (sample, head) P and C_h ; y = C W_out^T + b_out
void forward(const OpArgs &a) {
    const Dims d = dims_of(*a.l);
    const View v = view_of(a, d);
    const int64_t rows = a.n * d.t;
    char *pack = projection_pack(a, 0);
    // No scratch: the projections keep the small loops' sums in depth
    // order below the small products' size (cpu/product_paths.cpp), which
    // the GPU's products repeat on near-tie scores.
    gemm_at(a.precision, false, true, rows, 3 * d.e, d.e, a.x[0], d.e, v.w_in, d.e, v.qkv, 3 * d.e, false, pack,
            nullptr);
    add_bias_rows(v.qkv, v.b_in, rows, 3 * d.e);
    Job job{&d, a.n, a.lengths, v, nullptr, nullptr, nullptr, a.precision,
            pack ? pack + projection_pack_bytes(d, a.n, false) : nullptr};
    parallel_run(workers_for(*static_cast<Plan *>(a.plan), d, a.n), forward_worker, &job);
    gemm_at(a.precision, false, true, rows, d.e, d.e, v.ctx, d.e, v.w_out, d.e, a.y, d.e, false, pack, nullptr);
    add_bias_rows(a.y, v.b_out, rows, d.e);
}

// dW_out = dy^T C ; db_out = colsum dy ; dC = dy W_out ; per (sample, head)
// dqkv ; dW_in = dqkv^T x ; db_in = colsum dqkv ; dx = dqkv W_in
void backward(const OpArgs &a) {
    const Dims d = dims_of(*a.l);
    const View v = view_of(a, d);
    const int64_t rows = a.n * d.t;
    float *g = a.grads + a.l->weight_offset;
    float *dw_in = g, *db_in = g + 3 * d.e * d.e, *dw_out = db_in + 3 * d.e, *db_out = dw_out + d.e * d.e;
    const Plan &p = *static_cast<Plan *>(a.plan);
    float *dctx = static_cast<float *>(a.workspace), *dqkv = dctx + rows * d.e, *dp = dqkv + rows * 3 * d.e;
    char *pack = projection_pack(a, backward_floats(d, a.n, p.workers) * sizeof(float));
    gemm_at(a.precision, true, false, d.e, d.e, rows, a.dy, d.e, v.ctx, d.e, dw_out, d.e, false, pack);
    column_sums(db_out, a.dy, rows, d.e);
    gemm_at(a.precision, false, false, rows, d.e, d.e, a.dy, d.e, v.w_out, d.e, dctx, d.e, false, pack);
    Job job{&d, a.n, a.lengths, v, dctx, dqkv, dp, a.precision,
            pack ? pack + projection_pack_bytes(d, a.n, true) : nullptr};
    parallel_run(workers_for(p, d, a.n), backward_worker, &job);
    gemm_at(a.precision, true, false, 3 * d.e, d.e, rows, dqkv, 3 * d.e, a.x[0], d.e, dw_in, d.e, false, pack);
    column_sums(db_in, dqkv, rows, 3 * d.e);
    if (a.dx[0])
        gemm_at(a.precision, false, false, rows, d.e, 3 * d.e, dqkv, 3 * d.e, v.w_in, d.e, a.dx[0], d.e, false, pack);
}

}  // namespace

extern const OpKernels cpu_op_attention{plan, release, forward, backward,
                                        precision_bit(Precision::f32) | precision_bit(Precision::bf16)};

}  // namespace snn
