// The GRU op on the CPU (ops/gru.cpp): the time loop of cpu/recurrent.h
// with the GRU cell of engine/math.h. Gate rows are r, z, n; the kept cell
// value is hn = h_prev W_hn^T + b_hn.
#include "cpu/recurrent.h"

namespace snn {
namespace {

struct Gru {
    // (r, z, n, h) = gru_cell(xp + b_ih, hp + b_hh, h_prev) ; cell = hn
    static void forward(int64_t H, const float *xp, const float *hp, const float *b_ih, const float *b_hh,
                        const float *, const float *h_prev, float *gates, float *hn, float *h) {
        float x[3], r[3];
        for (int64_t j = 0; j < H; ++j) {
            for (int64_t q = 0; q < 3; ++q) {
                x[q] = xp[q * H + j] + (b_ih ? b_ih[q * H + j] : 0.0f);
                r[q] = hp[q * H + j] + (b_hh ? b_hh[q * H + j] : 0.0f);
            }
            const GruCell c = gru_cell(x[0], x[1], x[2], r[0], r[1], r[2], h_prev[j]);
            gates[j] = c.r;
            gates[H + j] = c.z;
            gates[2 * H + j] = c.n;
            hn[j] = r[2];
            h[j] = c.h;
        }
    }

    // g = gru_cell_grad(gates, hn, h_prev, dh + dy) ; dxp = (zr, zz, zn) ;
    // dhp = (zr, zz, zn r) ; h_prev's direct part dh z
    static void backward(int64_t H, const float *gates, const float *hn, const float *, const float *h_prev,
                         const float *dh, const float *dy, float *, float *dxp, float *dhp, float *dh_prev) {
        for (int64_t j = 0; j < H; ++j) {
            const float dhj = dh[j] + (dy ? dy[j] : 0.0f);
            const GruCellGrad g = gru_cell_grad(gates[j], gates[H + j], gates[2 * H + j], hn[j], h_prev[j], dhj);
            dxp[j] = dhp[j] = g.zr;
            dxp[H + j] = dhp[H + j] = g.zz;
            dxp[2 * H + j] = g.zn;
            dhp[2 * H + j] = g.hn;
            dh_prev[j] = g.h_prev;
        }
    }
};

}  // namespace

extern const OpKernels cpu_op_gru = recurrent_cpu_kernels<Gru>();

}  // namespace snn
