// The cells of the recurrent layers, lstm and gru, and their gradients
// (core/math.h).
#pragma once

#include <math.h>
#include <stdint.h>

#include "core/math_activations.h"

namespace snn {

// Recurrent layers (lstm, gru) over a sequence of T steps, PyTorch's
// packed sequences: at iteration k (0..T-1) of a direction, sample s of
// length len runs its step k (forward) or len - 1 - k (reverse) while
// k < len; later iterations only carry its state, and the step they name,
// k, is one of its padded steps (output 0). So every step is named once.
SNN_HD bool recurrent_active(int64_t k, int32_t len) { return k < len; }
SNN_HD int64_t recurrent_step(int64_t k, int32_t len, bool reverse) {
    return reverse && k < len ? len - 1 - k : k;
}

// One LSTM cell element from its gates' pre-activations zi, zf, zg, zo
// (x W_ih^T + b_ih + h W_hh^T + b_hh) and the previous cell state:
//   i = sigmoid(zi), f = sigmoid(zf), g = tanh(zg), o = sigmoid(zo)
//   c = f c_prev + i g ; h = o tanh(c)
struct LstmCell {
    float i, f, g, o, c, h;
};
SNN_HD_INLINE LstmCell lstm_cell(float zi, float zf, float zg, float zo, float c_prev) {
    LstmCell r;
    r.i = sigmoid_approx(zi);
    r.f = sigmoid_approx(zf);
    r.g = tanh_approx(zg);
    r.o = sigmoid_approx(zo);
    r.c = r.f * c_prev + r.i * r.g;
    r.h = r.o * tanh_approx(r.c);
    return r;
}

// Its gradients, from dh and dc (of h and c, from later steps and the
// output) and the kept gates and states:
//   dct = dc + dh o (1 - tanh(c)^2) ; dc_prev = dct f
//   dzi = dct g i (1 - i), dzf = dct c_prev f (1 - f), dzg = dct i (1 - g^2),
//   dzo = dh tanh(c) o (1 - o)
struct LstmCellGrad {
    float zi, zf, zg, zo, c_prev;
};
SNN_HD_INLINE LstmCellGrad lstm_cell_grad(float i, float f, float g, float o, float c, float c_prev, float dh,
                                   float dc) {
    const float tc = tanh_approx(c);
    const float dct = dc + dh * o * (1.0f - tc * tc);
    LstmCellGrad r;
    r.zi = dct * g * i * (1.0f - i);
    r.zf = dct * c_prev * f * (1.0f - f);
    r.zg = dct * i * (1.0f - g * g);
    r.zo = dh * tc * o * (1.0f - o);
    r.c_prev = dct * f;
    return r;
}

// One GRU cell element from the input parts xr, xz, xn (x W_i^T + b_i), the
// recurrent parts hr, hz (h W_h^T + b_h) and hn = h_prev W_hn^T + b_hn:
//   r = sigmoid(xr + hr), z = sigmoid(xz + hz), n = tanh(xn + r hn)
//   h = (1 - z) n + z h_prev
struct GruCell {
    float r, z, n, h;
};
SNN_HD GruCell gru_cell(float xr, float xz, float xn, float hr, float hz, float hn, float h_prev) {
    GruCell c;
    c.r = sigmoid_approx(xr + hr);
    c.z = sigmoid_approx(xz + hz);
    c.n = tanh_approx(xn + c.r * hn);
    c.h = (1.0f - c.z) * c.n + c.z * h_prev;
    return c;
}

// Its gradients from dh and the kept r, z, n, hn and h_prev:
//   dzn = dh (1 - z) (1 - n^2)                 (of xn; hn's is dzn r)
//   dzr = dzn hn r (1 - r), dzz = dh (h_prev - n) z (1 - z)
//   h_prev's own part: dh z (the rest flows through W_hh)
struct GruCellGrad {
    float zr, zz, zn, hn, h_prev;
};
SNN_HD GruCellGrad gru_cell_grad(float r, float z, float n, float hn, float h_prev, float dh) {
    GruCellGrad g;
    g.zn = dh * (1.0f - z) * (1.0f - n * n);
    g.hn = g.zn * r;
    g.zr = g.zn * hn * r * (1.0f - r);
    g.zz = dh * (h_prev - n) * z * (1.0f - z);
    g.h_prev = dh * z;
    return g;
}

}  // namespace snn
