// The LSTM op on the CPU (ops/lstm.cpp): the time loop of cpu/recurrent.h
// with the LSTM cell of core/math.h. Gate rows are i, f, g, o.
#include "cpu/multiversion.h"
#include "cpu/recurrent.h"

namespace snn {
namespace {

// z = xp + hp (+ b_ih + b_hh) per gate ; (i, f, g, o, c, h) = lstm_cell(z, c_prev)
template <bool Bias>
__attribute__((always_inline)) inline void forward_row(int64_t H, const float *__restrict xp,
                                                       const float *__restrict hp, const float *__restrict b_ih,
                                                       const float *__restrict b_hh, const float *__restrict c_prev,
                                                       float *__restrict gates, float *__restrict c,
                                                       float *__restrict h) {
    for (int64_t j = 0; j < H; ++j) {
        float zi = xp[j] + hp[j], zf = xp[H + j] + hp[H + j];
        float zg = xp[2 * H + j] + hp[2 * H + j], zo = xp[3 * H + j] + hp[3 * H + j];
        if (Bias) {
            zi += b_ih[j] + b_hh[j];
            zf += b_ih[H + j] + b_hh[H + j];
            zg += b_ih[2 * H + j] + b_hh[2 * H + j];
            zo += b_ih[3 * H + j] + b_hh[3 * H + j];
        }
        const LstmCell r = lstm_cell(zi, zf, zg, zo, c_prev[j]);
        gates[j] = r.i;
        gates[H + j] = r.f;
        gates[2 * H + j] = r.g;
        gates[3 * H + j] = r.o;
        c[j] = r.c;
        h[j] = r.h;
    }
}

SNN_MULTIVERSION_512
void forward_rows(int64_t H, const float *xp, const float *hp, const float *b_ih, const float *b_hh,
                  const float *c_prev, float *gates, float *c, float *h) {
    if (b_ih)
        forward_row<true>(H, xp, hp, b_ih, b_hh, c_prev, gates, c, h);
    else
        forward_row<false>(H, xp, hp, b_ih, b_hh, c_prev, gates, c, h);
}

// dz = lstm_cell_grad(gates, c, c_prev, dh + dy, dc) ; dxp = dhp = dz ;
// dc becomes dc_prev ; h_prev's gradient is dz W_hh alone
template <bool Output>
__attribute__((always_inline)) inline void backward_row(int64_t H, const float *__restrict gates,
                                                        const float *__restrict c, const float *__restrict c_prev,
                                                        const float *__restrict dh, const float *__restrict dy,
                                                        float *__restrict dc, float *__restrict dxp,
                                                        float *__restrict dhp, float *__restrict dh_prev) {
    for (int64_t j = 0; j < H; ++j) {
        const float dhj = Output ? dh[j] + dy[j] : dh[j];
        const LstmCellGrad g =
            lstm_cell_grad(gates[j], gates[H + j], gates[2 * H + j], gates[3 * H + j], c[j], c_prev[j], dhj, dc[j]);
        dxp[j] = g.zi;
        dxp[H + j] = g.zf;
        dxp[2 * H + j] = g.zg;
        dxp[3 * H + j] = g.zo;
        dc[j] = g.c_prev;
        dh_prev[j] = 0.0f;
    }
    // dhp = dxp in a pass of its own: with these stores in the loop above,
    // GCC 12 vectorizes neither.
    memcpy(dhp, dxp, size_t(4 * H) * sizeof(float));
}

SNN_MULTIVERSION_512
void backward_rows(int64_t H, const float *gates, const float *c, const float *c_prev, const float *dh, const float *dy,
                   float *dc, float *dxp, float *dhp, float *dh_prev) {
    if (dy)
        backward_row<true>(H, gates, c, c_prev, dh, dy, dc, dxp, dhp, dh_prev);
    else
        backward_row<false>(H, gates, c, c_prev, dh, dy, dc, dxp, dhp, dh_prev);
}

struct Lstm {
    static void forward(int64_t H, const float *xp, const float *hp, const float *b_ih, const float *b_hh,
                        const float *c_prev, const float *, float *gates, float *c, float *h) {
        forward_rows(H, xp, hp, b_ih, b_hh, c_prev, gates, c, h);
    }
    static void backward(int64_t H, const float *gates, const float *c, const float *c_prev, const float *,
                         const float *dh, const float *dy, float *dc, float *dxp, float *dhp, float *dh_prev) {
        backward_rows(H, gates, c, c_prev, dh, dy, dc, dxp, dhp, dh_prev);
    }
};

}  // namespace

extern const OpKernels cpu_op_lstm = recurrent_cpu_kernels<Lstm>();

}  // namespace snn
