// Convolution on the CPU by im2col lowering and sgemm. A chunk of images is
// lowered at once into col[K][nb*P] (K = cin*kh*kw, P = hout*wout), so one
// sgemm covers the chunk: Z[cout][nb*P] = W[cout][K] col. A fused pass then
// adds the bias, applies the activation and scatters Z into NCHW order.
#include <algorithm>
#include <new>

#include "common/error.h"
#include "cpu/cpu_backend.h"

namespace snn {
namespace {

// Lowered columns of one chunk kept under this many floats (the im2col
// buffer stays within a few MiB of cache-friendly memory).
constexpr int64_t kColBudget = int64_t(1) << 20;

struct ConvPlan {
    int64_t chunk;  // images lowered per sgemm
};

// col[(c*kh + i)*kw + j][img*P + oy*wout + ox] = x[img][c][oy*sh - ph + i][ox*sw - pw + j]
// (zero outside the image).
void im2col(const ConvDims &d, int64_t nb, const float *x, float *col) {
    const int64_t P = d.hout * d.wout, ld = nb * P, in_map = d.hin * d.win;
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
                float *row = col + ((c * d.kh + i) * d.kw + j) * ld;
                for (int64_t img = 0; img < nb; ++img) {
                    const float *map = x + (img * d.cin + c) * in_map;
                    float *out = row + img * P;
                    for (int64_t oy = 0; oy < d.hout; ++oy) {
                        int64_t iy = oy * d.sh - d.ph + i;
                        float *o = out + oy * d.wout;
                        if (iy < 0 || iy >= d.hin) {
                            for (int64_t ox = 0; ox < d.wout; ++ox) o[ox] = 0.0f;
                            continue;
                        }
                        const float *src = map + iy * d.win;
                        for (int64_t ox = 0; ox < d.wout; ++ox) {
                            int64_t ix = ox * d.sw - d.pw + j;
                            o[ox] = (ix >= 0 && ix < d.win) ? src[ix] : 0.0f;
                        }
                    }
                }
            }
}

// The adjoint of im2col: dx[img][c][iy][ix] += col[...] for every place the
// input element was copied to. dx must be zeroed first.
void col2im(const ConvDims &d, int64_t nb, const float *col, float *dx) {
    const int64_t P = d.hout * d.wout, ld = nb * P, in_map = d.hin * d.win;
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
                const float *row = col + ((c * d.kh + i) * d.kw + j) * ld;
                for (int64_t img = 0; img < nb; ++img) {
                    float *map = dx + (img * d.cin + c) * in_map;
                    const float *in = row + img * P;
                    for (int64_t oy = 0; oy < d.hout; ++oy) {
                        int64_t iy = oy * d.sh - d.ph + i;
                        if (iy < 0 || iy >= d.hin) continue;
                        float *dst = map + iy * d.win;
                        const float *o = in + oy * d.wout;
                        for (int64_t ox = 0; ox < d.wout; ++ox) {
                            int64_t ix = ox * d.sw - d.pw + j;
                            if (ix >= 0 && ix < d.win) dst[ix] += o[ox];
                        }
                    }
                }
            }
}

}  // namespace

void *CpuBackend::conv_plan(Stream *, const ConvDims &d, int64_t max_batch, bool,
                            size_t *workspace_bytes) {
    const int64_t K = d.cin * d.kh * d.kw, P = d.hout * d.wout;
    int64_t chunk = std::max<int64_t>(1, kColBudget / std::max<int64_t>(1, K * P));
    chunk = std::min(chunk, max_batch);
    auto *plan = new (std::nothrow) ConvPlan{chunk};
    if (!plan) fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory");
    // col[K][chunk*P] and Z[cout][chunk*P]
    *workspace_bytes = size_t((K + d.cout) * chunk * P) * sizeof(float);
    return plan;
}

void CpuBackend::conv_plan_release(void *plan) noexcept { delete static_cast<ConvPlan *>(plan); }

void CpuBackend::conv_forward(Stream *, void *plan, const ConvDims &d, int64_t n, const float *x,
                              const float *w, const float *b, float *y, void *workspace) {
    const int64_t K = d.cin * d.kh * d.kw, P = d.hout * d.wout;
    const int64_t chunk = static_cast<ConvPlan *>(plan)->chunk;
    float *col = static_cast<float *>(workspace);
    float *z = col + K * chunk * P;
    for (int64_t i0 = 0; i0 < n; i0 += chunk) {
        const int64_t nb = std::min(chunk, n - i0), ld = nb * P;
        im2col(d, nb, x + i0 * d.cin * d.hin * d.win, col);
        gemm_nn(d.cout, ld, K, w, K, col, ld, z, ld, false);
        // y[img][co][p] = act(z[co][img*P + p] + b[co])
        for (int64_t img = 0; img < nb; ++img)
            for (int64_t co = 0; co < d.cout; ++co) {
                const float *src = z + co * ld + img * P;
                float *dst = y + ((i0 + img) * d.cout + co) * P;
                const float bias = d.bias ? b[co] : 0.0f;
                for (int64_t p = 0; p < P; ++p) dst[p] = activate(d.act, src[p] + bias);
            }
    }
}

// Per chunk: Z = dy * act'(y) gathered to [cout][nb*P]; db += row sums of Z;
// dW += Z col^T; dcol = W^T Z (written over col) ; dx = col2im(dcol).
void CpuBackend::conv_backward(Stream *, void *plan, const ConvDims &d, int64_t n, const float *x,
                               const float *w, const float *y, float *dy, float *dw, float *db,
                               float *dx, void *workspace) {
    const int64_t K = d.cin * d.kh * d.kw, P = d.hout * d.wout, in_size = d.cin * d.hin * d.win;
    const int64_t chunk = static_cast<ConvPlan *>(plan)->chunk;
    float *col = static_cast<float *>(workspace);
    float *z = col + K * chunk * P;
    if (d.bias)
        for (int64_t co = 0; co < d.cout; ++co) db[co] = 0.0f;
    for (int64_t i0 = 0; i0 < n; i0 += chunk) {
        const int64_t nb = std::min(chunk, n - i0), ld = nb * P;
        for (int64_t img = 0; img < nb; ++img)
            for (int64_t co = 0; co < d.cout; ++co) {
                const int64_t off = ((i0 + img) * d.cout + co) * P;
                float *g = dy + off;
                const float *out = y + off;
                float *dst = z + co * ld + img * P;
                if (d.act == Act::identity) {
                    for (int64_t p = 0; p < P; ++p) dst[p] = g[p];
                } else {
                    for (int64_t p = 0; p < P; ++p) dst[p] = g[p] * activation_derivative(d.act, out[p]);
                }
            }
        if (d.bias)
            for (int64_t co = 0; co < d.cout; ++co) {
                const float *row = z + co * ld;
                float s = 0.0f;
                for (int64_t p = 0; p < ld; ++p) s += row[p];
                db[co] += s;
            }
        im2col(d, nb, x + i0 * in_size, col);
        gemm_nt(d.cout, K, ld, z, ld, col, ld, dw, K, i0 > 0);
        if (dx) {
            gemm_tn(K, ld, d.cout, w, K, z, ld, col, ld, false);
            float *dxc = dx + i0 * in_size;
            for (int64_t i = 0; i < nb * in_size; ++i) dxc[i] = 0.0f;
            col2im(d, nb, col, dxc);
        }
    }
}

}  // namespace snn
