// conv1d on the CPU (ops/conv1d.cpp) by lowering and sgemm: a chunk of
// samples is lowered to col[rows][C K] (rows = samples x T', ops/seq_math.h),
// so one product covers the chunk, z[rows][out] = col W^T, whose rows are
// the output [n][T'][out] itself; bias and activation are fused after it.
// The chunk size depends on the shapes alone, so results do not depend on
// the largest batch a cache was made for. At bf16 the products take
// gemm_bf16, its packing after the lowered rows in the workspace.
#include <algorithm>
#include <string.h>

#include "cpu/activation.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm_bf16.h"
#include "ops/op.h"
#include "ops/seq_math.h"

namespace snn {
namespace {

// A chunk's lowered rows stay under this many floats.
constexpr int64_t kLoweredBudget = int64_t(1) << 20;

int64_t chunk_of(const Conv1dDims &d) { return std::max<int64_t>(1, kLoweredBudget / (d.out_steps * d.cols())); }

// Floats of a chunk's lowered rows (then, at bf16, the packing of gemm_bf16).
size_t lowered_floats(const Conv1dDims &d, int64_t max_batch) {
    return size_t(std::min(chunk_of(d), max_batch) * d.out_steps * d.cols());
}

void *plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision p,
           size_t *workspace_bytes) {
    const Conv1dDims d = conv1d_dims(l);
    *workspace_bytes = lowered_floats(d, max_batch) * sizeof(float);
    if (p == Precision::bf16) {
        const int64_t rows = std::min(chunk_of(d), max_batch) * d.out_steps;
        size_t pack = gemm_bf16_bytes(rows, d.out, d.cols());
        if (backward) pack = std::max({pack, gemm_bf16_bytes(d.out, d.cols(), rows), gemm_bf16_bytes(rows, d.cols(), d.out)});
        *workspace_bytes += pack;
    }
    return nullptr;
}

// col[r][c K + k] = x[s][t' S - P + k D][c] (ops/seq_math.h's
// conv1d_lowered) for the nb samples from first: per row and tap, the
// step's channels, or zeros outside the sample's valid steps
void lower(const Conv1dDims &d, const float *x, const int32_t *lengths, int64_t first, int64_t nb, float *col) {
    const int64_t cols = d.cols();
    for (int64_t s = first; s < first + nb; ++s) {
        const int64_t len = valid_steps(lengths, s, d.steps);
        for (int64_t t = 0; t < d.out_steps; ++t) {
            float *row = col + ((s - first) * d.out_steps + t) * cols;
            for (int64_t k = 0; k < d.k; ++k) {
                const int64_t ti = t * d.stride - d.pad + k * d.dilation;
                if (ti < 0 || ti >= len) {
                    for (int64_t c = 0; c < d.channels; ++c) row[c * d.k + k] = 0.0f;
                    continue;
                }
                const float *step = x + (s * d.steps + ti) * d.channels;
                for (int64_t c = 0; c < d.channels; ++c) row[c * d.k + k] = step[c];
            }
        }
    }
}

// dx[s][ti][c] = the sum over taps k = 0, 1, ... of dcol where x[s][ti][c]
// was copied to (conv1d_adjoint, the same order), for the nb samples from
// first; 0 past each sample's length
void lower_adjoint(const Conv1dDims &d, const float *dcol, const int32_t *lengths, int64_t first, int64_t nb,
                   float *dx) {
    const int64_t cols = d.cols();
    for (int64_t s = first; s < first + nb; ++s) {
        const int64_t len = valid_steps(lengths, s, d.steps);
        for (int64_t ti = 0; ti < d.steps; ++ti) {
            float *step = dx + (s * d.steps + ti) * d.channels;
            for (int64_t c = 0; c < d.channels; ++c) step[c] = 0.0f;
            for (int64_t k = 0; k < d.k && ti < len; ++k) {
                const int64_t at = ti + d.pad - k * d.dilation;  // t' S
                if (at < 0 || at % d.stride != 0 || at / d.stride >= d.out_steps) continue;
                const float *row = dcol + ((s - first) * d.out_steps + at / d.stride) * cols;
                for (int64_t c = 0; c < d.channels; ++c) step[c] += row[c * d.k + k];
            }
        }
    }
}

// z = lower(x) W^T (+ b) ; y = act(z), z kept in aux for gelu and silu
void forward(const OpArgs &a) {
    const Layer &l = *a.l;
    const Conv1dDims d = conv1d_dims(l);
    const float *w = a.params + l.weight_offset, *b = a.params + l.bias_offset;
    float *col = static_cast<float *>(a.workspace);
    float *pack = col + lowered_floats(d, a.n);
    float *z = act_uses_input(l.act) ? a.aux + l.aux_fixed : a.y;
    const int64_t chunk = chunk_of(d), rows = a.n * d.out_steps;
    for (int64_t s0 = 0; s0 < a.n; s0 += chunk) {
        const int64_t nb = std::min(chunk, a.n - s0);
        lower(d, a.x[0], a.lengths, s0, nb, col);
        gemm_at(a.precision, false, true, nb * d.out_steps, d.out, d.cols(), col, d.cols(), w, d.cols(),
                z + s0 * d.out_steps * d.out, d.out, false, pack, scratch_of(a.s));
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
    float *pack = col + lowered_floats(d, a.n);
    const int64_t chunk = chunk_of(d), rows = a.n * d.out_steps;
    float *dz = a.dy;
    derivative_span(l.act, dz, act_uses_input(l.act) ? a.aux + l.aux_fixed : a.y, dz, rows * d.out);
    for (int64_t s0 = 0; s0 < a.n; s0 += chunk) {
        const int64_t nb = std::min(chunk, a.n - s0);
        const float *dz0 = dz + s0 * d.out_steps * d.out;
        lower(d, a.x[0], a.lengths, s0, nb, col);
        gemm_at(a.precision, true, false, d.out, d.cols(), nb * d.out_steps, dz0, d.out, col, d.cols(), dw, d.cols(),
                s0 > 0, pack);
        if (!a.dx[0]) continue;
        gemm_at(a.precision, false, false, nb * d.out_steps, d.cols(), d.out, dz0, d.out, w, d.cols(), col, d.cols(),
                false, pack);
        lower_adjoint(d, col, a.lengths, s0, nb, a.dx[0]);
    }
    if (l.bias) {
        memset(db, 0, size_t(d.out) * sizeof(float));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < d.out; ++o) db[o] += dz[r * d.out + o];
    }
}

}  // namespace

extern const OpKernels cpu_op_conv1d{plan, nullptr, forward, backward,
                                     precision_bit(Precision::f32) | precision_bit(Precision::bf16)};

}  // namespace snn
