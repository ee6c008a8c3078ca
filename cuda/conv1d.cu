// The conv1d op with cuBLAS (ops/conv1d.cpp): a chunk of samples is lowered
// into the workspace (conv1d_lower.h), col[rows][C K] with rows = samples x
// T', and one product gives the chunk's output rows, z[rows][out] = col W^T,
// which are y [n][T'][out] itself; then bias and activation (z kept in aux
// for gelu and silu).
//
// cuBLAS is column-major: a row-major A[r][c] read column-major is A^T.
// These are dense.cu's products with x = col, in = C K and n = rows. At
// bf16 and fp16 their operands are 16-bit copies after the float scratch
// (low_precision.h).
#include <algorithm>

#include "conv1d_lower.h"
#include "low_precision.h"
#include "ops.h"

namespace snn {
namespace cu {
namespace {

// A chunk's lowered rows stay under this many floats; the chunk size
// depends on the shapes alone.
constexpr int64_t kLoweredBudget = int64_t(1) << 22;

int64_t chunk_of(const Conv1dDims &d) { return std::max<int64_t>(1, kLoweredBudget / (d.out_steps * d.cols())); }

// The float scratch: a chunk's lowered rows.
size_t col_bytes(const Conv1dDims &d, int64_t max_batch) {
    return aligned16(size_t(std::min(chunk_of(d), max_batch) * d.out_steps * d.cols()) * sizeof(float));
}

// Workspace: the lowered rows; at a low precision then the 16-bit copies of
// W, the rows and (backward) the chunk's dz.
void *conv1d_plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision p,
                  size_t *workspace_bytes) {
    const Conv1dDims d = conv1d_dims(l);
    const size_t rows = size_t(std::min(chunk_of(d), max_batch) * d.out_steps);
    *workspace_bytes = col_bytes(d, max_batch) + low_bytes(p, {size_t(d.out * d.cols()), rows * size_t(d.cols()),
                                                              backward ? rows * size_t(d.out) : 0});
    return nullptr;
}

// y[rows][out] = act(lower(x)[rows][C K] W[out][C K]^T + b), chunk by chunk:
// Y^T (out x rows) = W (out x CK: buffer w, OP_T, ld CK) . col^T (CK x rows: buffer col, OP_N)
void conv1d_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const Conv1dDims d = conv1d_dims(l);
    if (a.n <= 0) return;
    const Precision p = a.precision;
    float *col = static_cast<float *>(a.workspace);
    const int64_t chunk = chunk_of(d);
    LowScratch low(p, a.workspace, col_bytes(d, a.n));
    const void *w = operand(cs, p, a.params + l.weight_offset, size_t(d.out * d.cols()), low.take(d.out * d.cols()));
    uint16_t *col16 = low.take(std::min(chunk, a.n) * d.out_steps * d.cols());
    for (int64_t s0 = 0; s0 < a.n; s0 += chunk) {
        const int64_t nb = std::min(chunk, a.n - s0), rows = nb * d.out_steps;
        conv1d_lower(cs.stream, d, a.x[0], a.lengths, s0, nb, col);
        const void *c = operand(cs, p, col, size_t(rows * d.cols()), col16);
        gemm_at(cs, p, CUBLAS_OP_T, CUBLAS_OP_N, d.out, rows, d.cols(), 1.0f, w, d.cols(), c, d.cols(), 0.0f,
                a.y + s0 * d.out_steps * d.out, d.out, "cublasGemm (conv1d forward)");
    }
    float *z = act_uses_input(l.act) ? aux_per_sample(a) : nullptr;
    bias_activation(cs.stream, a.y, z, l.bias ? a.params + l.bias_offset : nullptr,
                    static_cast<size_t>(a.n * d.out_steps * d.out), d.out, 1, l.act);
}

// dz = dy act'(y or z) in place ; per chunk:
//   dW^T (CK x out) (+)= col^T (CK x rows: buffer col, OP_N) . dZ (rows x out: buffer dz, OP_T)
//   dcol^T (CK x rows) = W^T (CK x out: buffer w, OP_N) . dZ^T (out x rows: buffer dz, OP_N)
//   dx = the adjoint of the lowering of dcol
// db = the column sums of dz.
void conv1d_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const Conv1dDims d = conv1d_dims(l);
    if (a.n <= 0) return;
    const Precision p = a.precision;
    float *dw = a.grads + l.weight_offset;
    float *col = static_cast<float *>(a.workspace);
    const int64_t chunk = chunk_of(d), total_rows = a.n * d.out_steps;
    activation_grad(cs.stream, a.dy, act_uses_input(l.act) ? aux_per_sample(a) : a.y,
                    static_cast<size_t>(total_rows * d.out), l.act);
    LowScratch low(p, a.workspace, col_bytes(d, a.n));
    const void *w = operand(cs, p, a.params + l.weight_offset, size_t(d.out * d.cols()), low.take(d.out * d.cols()));
    uint16_t *col16 = low.take(std::min(chunk, a.n) * d.out_steps * d.cols());
    uint16_t *dz16 = low.take(std::min(chunk, a.n) * d.out_steps * d.out);
    for (int64_t s0 = 0; s0 < a.n; s0 += chunk) {
        const int64_t nb = std::min(chunk, a.n - s0), rows = nb * d.out_steps;
        const void *dz = operand(cs, p, a.dy + s0 * d.out_steps * d.out, size_t(rows * d.out), dz16);
        conv1d_lower(cs.stream, d, a.x[0], a.lengths, s0, nb, col);
        const void *c = operand(cs, p, col, size_t(rows * d.cols()), col16);
        gemm_at(cs, p, CUBLAS_OP_N, CUBLAS_OP_T, d.cols(), d.out, rows, 1.0f, c, d.cols(), dz, d.out,
                s0 > 0 ? 1.0f : 0.0f, dw, d.cols(), "cublasGemm (conv1d weight gradient)");
        if (a.dx[0] == nullptr) continue;
        gemm_at(cs, p, CUBLAS_OP_N, CUBLAS_OP_N, d.cols(), rows, d.out, 1.0f, w, d.cols(), dz, d.out, 0.0f, col,
                d.cols(), "cublasGemm (conv1d input gradient)");
        conv1d_lower_adjoint(cs.stream, d, col, a.lengths, s0, nb, a.dx[0]);
    }
    if (l.bias) channel_sums(cs.stream, cs.sums, a.grads + l.bias_offset, a.dy, total_rows, d.out, 1);
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_conv1d{cu::conv1d_plan, nullptr, cu::conv1d_forward, cu::conv1d_backward,
                                      kAllPrecisions};

}  // namespace snn
