// Dense layer on the CPU: y = act(x W^T + b).
#include "cpu/activation.h"
#include "cpu/cpu_backend.h"

namespace snn {

// z = x W^T (+ b) ; y = act(z), bias and activation fused into one pass.
void CpuBackend::dense_forward(Stream *s, const DenseDims &d, int64_t n, const float *x,
                               const float *w, const float *b, float *y) {
    gemm_nt(n, d.out, d.in, x, d.in, w, d.in, y, d.out, false, scratch_of(s));
    if (d.bias)
        for (int64_t i = 0; i < n; ++i) add_bias_row(y + i * d.out, b, d.out);
    activate_inplace(d.act, y, n * d.out);
}

// dz = dy * act'(y) ; dW = dz^T x ; db = sum over the batch of dz ; dx = dz W
void CpuBackend::dense_backward(Stream *, const DenseDims &d, int64_t n, const float *x,
                                const float *w, const float *y, float *dy, float *dw, float *db,
                                float *dx) {
    derivative_span(d.act, dy, y, dy, n * d.out);
    gemm_tn(d.out, d.in, n, dy, d.out, x, d.in, dw, d.in, false);
    if (d.bias) {
        for (int64_t o = 0; o < d.out; ++o) db[o] = 0.0f;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < d.out; ++o) db[o] += dy[i * d.out + o];
    }
    if (dx) gemm_nn(n, d.in, d.out, dy, d.out, w, d.in, dx, d.in, false);
}

}  // namespace snn
