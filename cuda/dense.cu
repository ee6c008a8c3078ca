// Dense layers with cuBLAS.
//
// cuBLAS is column-major; a row-major matrix A[r][c] is, read column-major,
// its transpose A^T (c x r, leading dimension c). Every product below is the
// row-major formula rewritten on those transposes.
#include "cuda_backend.h"
#include "elementwise.h"

namespace snn {
namespace cu {

// y[n][out] = act(x[n][in] W[out][in]^T + b)
//
// Column-major: Y^T (out x n, ld out) = W (out x in) . X^T (in x n).
// The buffer w read column-major is W^T (in x out, ld in), so it enters
// transposed (OP_T); the buffer x is X^T (ld in) and enters as is (OP_N).
void CudaBackend::dense_forward(Stream *s, const DenseDims &d, int64_t n, const float *x,
                                const float *w, const float *b, float *y) {
    CudaStream &cs = use(s);
    if (n <= 0 || d.out <= 0) return;
    const float one = 1.0f, zero = 0.0f;
    check(cublasSgemm_64(cs.blas, CUBLAS_OP_T, CUBLAS_OP_N, d.out, n, d.in, &one, w, d.in, x, d.in,
                         &zero, y, d.out),
          "cublasSgemm (dense forward)");
    bias_activation(cs.stream, y, d.bias ? b : nullptr, static_cast<size_t>(n * d.out), d.out, 1,
                    d.act);
}

// dz = dy * act'(y)                    (in place in dy)
// dW[out][in] = dz^T[out][n] x[n][in]
// db[out]     = sum over the batch of dz
// dx[n][in]   = dz[n][out] W[out][in]
void CudaBackend::dense_backward(Stream *s, const DenseDims &d, int64_t n, const float *x,
                                 const float *w, const float *y, float *dy, float *dw, float *db,
                                 float *dx) {
    CudaStream &cs = use(s);
    const float one = 1.0f, zero = 0.0f;
    activation_grad(cs.stream, dy, y, static_cast<size_t>(n * d.out), d.act);
    float *dz = dy;

    // dW^T (in x out, ld in) = X^T (in x n: buffer x, OP_N, ld in)
    //                        . dZ  (n x out: buffer dz is dZ^T, so OP_T, ld out)
    check(cublasSgemm_64(cs.blas, CUBLAS_OP_N, CUBLAS_OP_T, d.in, d.out, n, &one, x, d.in, dz,
                         d.out, &zero, dw, d.in),
          "cublasSgemm (dense weight gradient)");

    if (d.bias) channel_sums(cs.stream, db, dz, n, d.out, 1);

    // dX^T (in x n, ld in) = W^T (in x out: buffer w, OP_N, ld in)
    //                      . dZ^T (out x n: buffer dz, OP_N, ld out)
    if (dx != nullptr)
        check(cublasSgemm_64(cs.blas, CUBLAS_OP_N, CUBLAS_OP_N, d.in, n, d.out, &one, w, d.in, dz,
                             d.out, &zero, dx, d.in),
              "cublasSgemm (dense input gradient)");
}

}  // namespace cu
}  // namespace snn
