// The LSTM op on the CPU (ops/lstm.cpp): the time loop of cpu/recurrent.h
// with the LSTM cell of engine/math.h. Gate rows are i, f, g, o.
#include "cpu/recurrent.h"

namespace snn {
namespace {

struct Lstm {
    // z = xp + hp (+ b_ih + b_hh) per gate ; (i, f, g, o, c, h) = lstm_cell(z, c_prev)
    static void forward(int64_t H, const float *xp, const float *hp, const float *b_ih, const float *b_hh,
                        const float *c_prev, const float *, float *gates, float *c, float *h) {
        float z[4];
        for (int64_t j = 0; j < H; ++j) {
            for (int64_t q = 0; q < 4; ++q)
                z[q] = xp[q * H + j] + hp[q * H + j] + (b_ih ? b_ih[q * H + j] + b_hh[q * H + j] : 0.0f);
            const LstmCell r = lstm_cell(z[0], z[1], z[2], z[3], c_prev[j]);
            gates[j] = r.i;
            gates[H + j] = r.f;
            gates[2 * H + j] = r.g;
            gates[3 * H + j] = r.o;
            c[j] = r.c;
            h[j] = r.h;
        }
    }

    // dz = lstm_cell_grad(gates, c, c_prev, dh + dy, dc) ; dxp = dhp = dz ;
    // dc becomes dc_prev ; h_prev's gradient is dz W_hh alone
    static void backward(int64_t H, const float *gates, const float *c, const float *c_prev, const float *,
                         const float *dh, const float *dy, float *dc, float *dxp, float *dhp, float *dh_prev) {
        for (int64_t j = 0; j < H; ++j) {
            const float dhj = dh[j] + (dy ? dy[j] : 0.0f);
            const LstmCellGrad g =
                lstm_cell_grad(gates[j], gates[H + j], gates[2 * H + j], gates[3 * H + j], c[j], c_prev[j], dhj, dc[j]);
            dxp[j] = dhp[j] = g.zi;
            dxp[H + j] = dhp[H + j] = g.zf;
            dxp[2 * H + j] = dhp[2 * H + j] = g.zg;
            dxp[3 * H + j] = dhp[3 * H + j] = g.zo;
            dc[j] = g.c_prev;
            dh_prev[j] = 0.0f;
        }
    }
};

}  // namespace

extern const OpKernels cpu_op_lstm = recurrent_cpu_kernels<Lstm>();

}  // namespace snn
