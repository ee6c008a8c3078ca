// The dense op with cuBLAS: y = act(x W^T + b), W [out][in], b [out]
// (ops/dense.cpp). For gelu and silu the pre-activation z is kept in aux.
// At bf16 and fp16 the products' operands are 16-bit copies in the
// workspace (low_precision.h).
//
// cuBLAS is column-major; a row-major matrix A[r][c] is, read column-major,
// its transpose A^T (c x r, leading dimension c). Every product below is the
// row-major formula rewritten on those transposes.
#include "low_precision.h"
#include "ops.h"

namespace snn {
namespace cu {
namespace {

// Workspace: the 16-bit copies of W, x and (backward) dz at a low precision.
void *dense_plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision p,
                 size_t *workspace_bytes) {
    const DenseDims d = dense_dims(l);
    const size_t rows = size_t(rows_of(l, max_batch));
    *workspace_bytes = low_bytes(p, {size_t(d.out * d.in), rows * size_t(d.in), backward ? rows * size_t(d.out) : 0});
    return nullptr;
}

// y[n][out] = act(x[n][in] W[out][in]^T + b)
//
// Column-major: Y^T (out x n, ld out) = W (out x in) . X^T (in x n).
// The buffer w read column-major is W^T (in x out, ld in), so it enters
// transposed (OP_T); the buffer x is X^T (ld in) and enters as is (OP_N).
void dense_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const DenseDims d = dense_dims(*a.l);
    const int64_t n = rows_of(*a.l, a.n);
    if (n <= 0 || d.out <= 0) return;
    const Precision p = a.precision;
    LowScratch low(p, a.workspace, 0);
    const void *w = operand(cs, p, a.params + a.l->weight_offset, size_t(d.out * d.in), low.take(d.out * d.in));
    const void *x = operand(cs, p, a.x[0], size_t(n * d.in), low.take(n * d.in));
    const float *b = d.bias ? a.params + a.l->bias_offset : nullptr;
    gemm_at(cs, p, CUBLAS_OP_T, CUBLAS_OP_N, d.out, n, d.in, 1.0f, w, d.in, x, d.in, 0.0f, a.y, d.out,
            "cublasGemm (dense forward)");
    float *z = act_uses_input(d.act) ? aux_per_sample(a) : nullptr;
    bias_activation(cs.stream, a.y, z, b, static_cast<size_t>(n * d.out), d.out, 1, d.act);
}

// dz = dy * act'(y), or act'(z) for gelu and silu   (in place in dy)
// dW[out][in] = dz^T[out][n] x[n][in]
// db[out]     = sum over the batch of dz
// dx[n][in]   = dz[n][out] W[out][in]
void dense_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const DenseDims d = dense_dims(*a.l);
    const int64_t n = rows_of(*a.l, a.n);
    const Precision p = a.precision;
    float *dw = a.grads + a.l->weight_offset;
    const float *v = act_uses_input(d.act) ? aux_per_sample(a) : a.y;
    activation_grad(cs.stream, a.dy, v, static_cast<size_t>(n * d.out), d.act);
    LowScratch low(p, a.workspace, 0);
    const void *w = operand(cs, p, a.params + a.l->weight_offset, size_t(d.out * d.in), low.take(d.out * d.in));
    const void *x = operand(cs, p, a.x[0], size_t(n * d.in), low.take(n * d.in));
    const void *dz = operand(cs, p, a.dy, size_t(n * d.out), low.take(n * d.out));

    // dW^T (in x out, ld in) = X^T (in x n: buffer x, OP_N, ld in)
    //                        . dZ  (n x out: buffer dz is dZ^T, so OP_T, ld out)
    gemm_at(cs, p, CUBLAS_OP_N, CUBLAS_OP_T, d.in, d.out, n, 1.0f, x, d.in, dz, d.out, 0.0f, dw, d.in,
            "cublasGemm (dense weight gradient)");

    if (d.bias) channel_sums(cs.stream, cs.sums, a.grads + a.l->bias_offset, a.dy, n, d.out, 1);

    // dX^T (in x n, ld in) = W^T (in x out: buffer w, OP_N, ld in)
    //                      . dZ^T (out x n: buffer dz, OP_N, ld out)
    if (a.dx[0] != nullptr)
        gemm_at(cs, p, CUBLAS_OP_N, CUBLAS_OP_N, d.in, n, d.out, 1.0f, w, d.in, dz, d.out, 0.0f, a.dx[0], d.in,
                "cublasGemm (dense input gradient)");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_dense{cu::dense_plan, nullptr, cu::dense_forward, cu::dense_backward,
                                     kAllPrecisions};

}  // namespace snn
