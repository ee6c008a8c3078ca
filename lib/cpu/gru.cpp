// The GRU op on the CPU (ops/gru.cpp): the time loop of cpu/recurrent.h
// with the GRU cell of core/math.h. Gate rows are r, z, n; the kept cell
// value is hn = h_prev W_hn^T + b_hn.
#include "cpu/multiversion.h"
#include "cpu/recurrent.h"

namespace snn {
namespace {

// (r, z, n, h) = gru_cell(xp + b_ih, hp + b_hh, h_prev) ; cell = hn
template <bool Bias>
__attribute__((always_inline)) inline void forward_row(int64_t H, const float *__restrict xp,
                                                       const float *__restrict hp, const float *__restrict b_ih,
                                                       const float *__restrict b_hh, const float *__restrict h_prev,
                                                       float *__restrict gates, float *__restrict hn,
                                                       float *__restrict h) {
    for (int64_t j = 0; j < H; ++j) {
        float xr = xp[j], xz = xp[H + j], xn = xp[2 * H + j];
        float hr = hp[j], hz = hp[H + j], hh = hp[2 * H + j];
        if (Bias) {
            xr += b_ih[j];
            xz += b_ih[H + j];
            xn += b_ih[2 * H + j];
            hr += b_hh[j];
            hz += b_hh[H + j];
            hh += b_hh[2 * H + j];
        }
        const GruCell c = gru_cell(xr, xz, xn, hr, hz, hh, h_prev[j]);
        gates[j] = c.r;
        gates[H + j] = c.z;
        gates[2 * H + j] = c.n;
        hn[j] = hh;
        h[j] = c.h;
    }
}

SNN_MULTIVERSION_512
void forward_rows(int64_t H, const float *xp, const float *hp, const float *b_ih, const float *b_hh,
                  const float *h_prev, float *gates, float *hn, float *h) {
    if (b_ih)
        forward_row<true>(H, xp, hp, b_ih, b_hh, h_prev, gates, hn, h);
    else
        forward_row<false>(H, xp, hp, b_ih, b_hh, h_prev, gates, hn, h);
}

// g = gru_cell_grad(gates, hn, h_prev, dh + dy) ; dxp = (zr, zz, zn) ;
// dhp = (zr, zz, zn r) ; h_prev's direct part dh z
template <bool Output>
__attribute__((always_inline)) inline void backward_row(int64_t H, const float *__restrict gates,
                                                        const float *__restrict hn, const float *__restrict h_prev,
                                                        const float *__restrict dh, const float *__restrict dy,
                                                        float *__restrict dxp, float *__restrict dhp,
                                                        float *__restrict dh_prev) {
    for (int64_t j = 0; j < H; ++j) {
        const float dhj = Output ? dh[j] + dy[j] : dh[j];
        const GruCellGrad g = gru_cell_grad(gates[j], gates[H + j], gates[2 * H + j], hn[j], h_prev[j], dhj);
        dxp[j] = g.zr;
        dxp[H + j] = g.zz;
        dxp[2 * H + j] = g.zn;
        dhp[2 * H + j] = g.hn;
        dh_prev[j] = g.h_prev;
    }
    // r's and z's parts of dhp in a pass of their own: with them in the
    // loop above, GCC 12 vectorizes neither.
    memcpy(dhp, dxp, size_t(2 * H) * sizeof(float));
}

SNN_MULTIVERSION_512
void backward_rows(int64_t H, const float *gates, const float *hn, const float *h_prev, const float *dh,
                   const float *dy, float *dxp, float *dhp, float *dh_prev) {
    if (dy)
        backward_row<true>(H, gates, hn, h_prev, dh, dy, dxp, dhp, dh_prev);
    else
        backward_row<false>(H, gates, hn, h_prev, dh, dy, dxp, dhp, dh_prev);
}

struct Gru {
    static void forward(int64_t H, const float *xp, const float *hp, const float *b_ih, const float *b_hh,
                        const float *, const float *h_prev, float *gates, float *hn, float *h) {
        forward_rows(H, xp, hp, b_ih, b_hh, h_prev, gates, hn, h);
    }
    static void backward(int64_t H, const float *gates, const float *hn, const float *, const float *h_prev,
                         const float *dh, const float *dy, float *, float *dxp, float *dhp, float *dh_prev) {
        backward_rows(H, gates, hn, h_prev, dh, dy, dxp, dhp, dh_prev);
    }
};

}  // namespace

extern const OpKernels cpu_op_gru = recurrent_cpu_kernels<Gru>();

}  // namespace snn
