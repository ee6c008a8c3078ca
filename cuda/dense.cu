// The dense op with cuBLAS: y = act(x W^T + b), W [out][in], b [out]
// (ops/dense.cpp). For gelu and silu the pre-activation z is kept in aux.
//
// cuBLAS is column-major; a row-major matrix A[r][c] is, read column-major,
// its transpose A^T (c x r, leading dimension c). Every product below is the
// row-major formula rewritten on those transposes.
#include "ops.h"

namespace snn {
namespace cu {
namespace {

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
    const float *w = a.params + a.l->weight_offset;
    const float *b = d.bias ? a.params + a.l->bias_offset : nullptr;
    const float one = 1.0f, zero = 0.0f;
    check(cublasSgemm_64(cs.blas, CUBLAS_OP_T, CUBLAS_OP_N, d.out, n, d.in, &one, w, d.in, a.x[0],
                         d.in, &zero, a.y, d.out),
          "cublasSgemm (dense forward)");
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
    const float *w = a.params + a.l->weight_offset;
    float *dw = a.grads + a.l->weight_offset;
    const float one = 1.0f, zero = 0.0f;
    const float *v = act_uses_input(d.act) ? aux_per_sample(a) : a.y;
    activation_grad(cs.stream, a.dy, v, static_cast<size_t>(n * d.out), d.act);
    const float *dz = a.dy;

    // dW^T (in x out, ld in) = X^T (in x n: buffer x, OP_N, ld in)
    //                        . dZ  (n x out: buffer dz is dZ^T, so OP_T, ld out)
    check(cublasSgemm_64(cs.blas, CUBLAS_OP_N, CUBLAS_OP_T, d.in, d.out, n, &one, a.x[0], d.in, dz,
                         d.out, &zero, dw, d.in),
          "cublasSgemm (dense weight gradient)");

    if (d.bias) channel_sums(cs.stream, a.grads + a.l->bias_offset, dz, n, d.out, 1);

    // dX^T (in x n, ld in) = W^T (in x out: buffer w, OP_N, ld in)
    //                      . dZ^T (out x n: buffer dz, OP_N, ld out)
    if (a.dx[0] != nullptr)
        check(cublasSgemm_64(cs.blas, CUBLAS_OP_N, CUBLAS_OP_N, d.in, n, d.out, &one, w, d.in, dz,
                             d.out, &zero, a.dx[0], d.in),
              "cublasSgemm (dense input gradient)");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_dense{nullptr, nullptr, cu::dense_forward, cu::dense_backward};

}  // namespace snn
