// conv1d on the CPU (ops/conv1d.cpp) by lowering and sgemm: a chunk of
// samples is lowered to col[rows][C K] (rows = samples x T', ops/seq_math.h),
// so one product covers the chunk, z[rows][out] = col W^T, whose rows are
// the output [n][T'][out] itself; bias and activation are fused after it.
// The chunk size depends on the shapes alone, so results do not depend on
// the largest batch a cache was made for.
#include <algorithm>
#include <string.h>

#include "cpu/activation.h"
#include "cpu/cpu_backend.h"
#include "ops/op.h"
#include "ops/seq_math.h"

namespace snn {
namespace {

// A chunk's lowered rows stay under this many floats.
constexpr int64_t kLoweredBudget = int64_t(1) << 20;

int64_t chunk_of(const Conv1dDims &d) { return std::max<int64_t>(1, kLoweredBudget / (d.out_steps * d.cols())); }

void *plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool, size_t *workspace_bytes) {
    const Conv1dDims d = conv1d_dims(l);
    *workspace_bytes = size_t(std::min(chunk_of(d), max_batch) * d.out_steps * d.cols()) * sizeof(float);
    return nullptr;
}

// col[r][j] = conv1d_lowered(r, j) for the nb samples from first
void lower(const Conv1dDims &d, const float *x, const int32_t *lengths, int64_t first, int64_t nb, float *col) {
    const int64_t rows = nb * d.out_steps, cols = d.cols();
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) col[r * cols + j] = conv1d_lowered(d, x, lengths, first, r, j);
}

// dx[s] = the adjoint of the lowering of dcol, for the nb samples from first
void lower_adjoint(const Conv1dDims &d, const float *dcol, const int32_t *lengths, int64_t first, int64_t nb,
                   float *dx) {
    for (int64_t s = first; s < first + nb; ++s)
        for (int64_t t = 0; t < d.steps; ++t)
            for (int64_t c = 0; c < d.channels; ++c)
                dx[(s * d.steps + t) * d.channels + c] = conv1d_adjoint(d, dcol, lengths, first, s, t, c);
}

// z = lower(x) W^T (+ b) ; y = act(z), z kept in aux for gelu and silu
void forward(const OpArgs &a) {
    const Layer &l = *a.l;
    const Conv1dDims d = conv1d_dims(l);
    const float *w = a.params + l.weight_offset, *b = a.params + l.bias_offset;
    float *col = static_cast<float *>(a.workspace);
    float *z = act_uses_input(l.act) ? a.aux + l.aux_fixed : a.y;
    const int64_t chunk = chunk_of(d), rows = a.n * d.out_steps;
    for (int64_t s0 = 0; s0 < a.n; s0 += chunk) {
        const int64_t nb = std::min(chunk, a.n - s0);
        lower(d, a.x[0], a.lengths, s0, nb, col);
        gemm_nt(nb * d.out_steps, d.out, d.cols(), col, d.cols(), w, d.cols(), z + s0 * d.out_steps * d.out, d.out,
                false, scratch_of(a.s));
    }
    if (l.bias)
        for (int64_t r = 0; r < rows; ++r) add_bias_row(z + r * d.out, b, d.out);
    if (z != a.y)
        activate_span(l.act, z, 0.0f, a.y, rows * d.out);
    else
        activate_inplace(l.act, a.y, rows * d.out);
}

// dz = dy act'(y or z) ; dW = sum over chunks of dz^T lower(x) ; db = sum of
// the rows of dz ; dx = adjoint of the lowering of dz W
void backward(const OpArgs &a) {
    const Layer &l = *a.l;
    const Conv1dDims d = conv1d_dims(l);
    const float *w = a.params + l.weight_offset;
    float *dw = a.grads + l.weight_offset, *db = a.grads + l.bias_offset;
    float *col = static_cast<float *>(a.workspace);
    const int64_t chunk = chunk_of(d), rows = a.n * d.out_steps;
    float *dz = a.dy;
    derivative_span(l.act, dz, act_uses_input(l.act) ? a.aux + l.aux_fixed : a.y, dz, rows * d.out);
    for (int64_t s0 = 0; s0 < a.n; s0 += chunk) {
        const int64_t nb = std::min(chunk, a.n - s0);
        const float *dz0 = dz + s0 * d.out_steps * d.out;
        lower(d, a.x[0], a.lengths, s0, nb, col);
        gemm_tn(d.out, d.cols(), nb * d.out_steps, dz0, d.out, col, d.cols(), dw, d.cols(), s0 > 0);
        if (!a.dx[0]) continue;
        gemm_nn(nb * d.out_steps, d.cols(), d.out, dz0, d.out, w, d.cols(), col, d.cols(), false);
        lower_adjoint(d, col, a.lengths, s0, nb, a.dx[0]);
    }
    if (l.bias) {
        memset(db, 0, size_t(d.out) * sizeof(float));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < d.out; ++o) db[o] += dz[r * d.out + o];
    }
}

}  // namespace

extern const OpKernels cpu_op_conv1d{plan, nullptr, forward, backward};

}  // namespace snn
