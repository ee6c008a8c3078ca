// Dense layer on the CPU: y = act(x W^T + b). At bf16 the three products
// take gemm_bf16 (operands rounded to bf16, float32 sums), whose packing the
// plan's workspace holds.
#include <algorithm>

#include "cpu/activation.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm_bf16.h"
#include "cpu/thread_pool.h"
#include "ops/dims.h"
#include "ops/op.h"

namespace snn {
namespace {

// Workspace: at bf16, the packing of the largest product of the pass.
void *plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision p,
           size_t *workspace_bytes) {
    const DenseDims d = dense_dims(l);
    const int64_t n = rows_of(l, max_batch);
    size_t bytes = 0;
    if (p == Precision::bf16) {
        bytes = gemm_bf16_bytes(n, d.out, d.in);
        if (backward) bytes = std::max({bytes, gemm_bf16_bytes(d.out, d.in, n), gemm_bf16_bytes(n, d.in, d.out)});
    }
    *workspace_bytes = bytes;
    return nullptr;
}

// z = x W^T (+ b) ; y = act(z), bias and activation fused into one pass, over
// n rows (the samples, or every step of a batch of sequences). For
// gelu and silu z is kept in aux (their derivatives need it).
void forward(const OpArgs &a) {
    const DenseDims d = dense_dims(*a.l);
    const int64_t n = rows_of(*a.l, a.n);
    const float *w = a.params + a.l->weight_offset, *b = a.params + a.l->bias_offset;
    float *z = act_uses_input(d.act) ? a.aux : a.y;
    gemm_at(a.precision, false, true, n, d.out, d.in, a.x[0], d.in, w, d.in, z, d.out, false, a.workspace,
            scratch_of(a.s));
    if (!d.bias && d.act == Act::identity) return;
    // Bias and activation, rows split over the pool.
    parallel_ranges(n, (kElementGrain + d.out - 1) / d.out, 1, [&](int64_t first, int64_t last) {
        if (d.bias)
            for (int64_t i = first; i < last; ++i) add_bias_row(z + i * d.out, b, d.out);
        if (z != a.y)
            activate_span(d.act, z + first * d.out, 0.0f, a.y + first * d.out, (last - first) * d.out);
        else
            activate_inplace(d.act, a.y + first * d.out, (last - first) * d.out);
    });
}

// dz = dy * act'(y or z) ; dW = dz^T x ; db = sum over the batch of dz ; dx = dz W
void backward(const OpArgs &a) {
    const DenseDims d = dense_dims(*a.l);
    const int64_t n = rows_of(*a.l, a.n);
    const float *w = a.params + a.l->weight_offset;
    float *dw = a.grads + a.l->weight_offset, *db = a.grads + a.l->bias_offset;
    float *dy = a.dy;
    if (d.act != Act::identity) {
        const float *v = act_uses_input(d.act) ? a.aux : a.y;
        parallel_ranges(n * d.out, kElementGrain, 16, [&](int64_t first, int64_t last) {
            derivative_span(d.act, dy + first, v + first, dy + first, last - first);
        });
    }
    gemm_at(a.precision, true, false, d.out, d.in, n, dy, d.out, a.x[0], d.in, dw, d.in, false, a.workspace);
    if (d.bias) {
        for (int64_t o = 0; o < d.out; ++o) db[o] = 0.0f;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < d.out; ++o) db[o] += dy[i * d.out + o];
    }
    if (a.dx[0]) gemm_at(a.precision, false, false, n, d.in, d.out, dy, d.out, w, d.in, a.dx[0], d.in, false, a.workspace);
}

}  // namespace

extern const OpKernels cpu_op_dense{plan, nullptr, forward, backward, precision_bit(Precision::f32) | precision_bit(Precision::bf16)};

}  // namespace snn
