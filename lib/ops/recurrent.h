// What the recurrent ops (lstm, gru) share: their sizes, the layout of their
// parameters, kept values and workspace, and the descriptor's parts
// (ops/recurrent.cpp). The cells differ only in their gate count and math
// (core/math.h); the time loops are cpu/recurrent.h and cuda/recurrent.cuh.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "ops/spec.h"
#include "ops/spec_text.h"

namespace snn {

// Parameters, per direction (then the same for the reverse one), in
// PyTorch's order: weight_ih [G*H][F], weight_hh [G*H][H], bias_ih [G*H],
// bias_hh [G*H] (no biases with nobias), G = 4 (lstm: i, f, g, o) or 3
// (gru: r, z, n).
//
// Kept values (aux), per direction, for a batch of n, in iteration order
// (iteration k, sample s: see recurrent_step in core/math.h):
//   gates [T][n][G*H]  the gates' activations
//   cell  [T][n][H]    lstm: the cell state c; gru: hn = h_prev W_hn^T + b_hn
//   h     [T][n][H]    the hidden state
// A sample past its length carries c and h on unchanged (gates 0), so the
// state of iteration T - 1 is every sample's final state.
struct RecurrentDims {
    int64_t F = 0, H = 0, T = 0, G = 0, dirs = 1;
    bool bias = true, last = false;

    int64_t GH() const { return G * H; }
    // Parameters of one direction, and where direction d's tensors lie
    // (relative to the node's first parameter).
    size_t dir_params() const { return size_t(GH() * (F + H) + (bias ? 2 * GH() : 0)); }
    size_t w_ih(int64_t d) const { return size_t(d) * dir_params(); }
    size_t w_hh(int64_t d) const { return w_ih(d) + size_t(GH() * F); }
    size_t b_ih(int64_t d) const { return w_hh(d) + size_t(GH() * H); }
    size_t b_hh(int64_t d) const { return b_ih(d) + size_t(GH()); }
    // Output features per step: H per direction.
    int64_t out_features() const { return dirs * H; }
    // Kept floats per sample and direction.
    size_t aux_per_dir() const { return size_t(T * (GH() + 2 * H)); }
};

inline RecurrentDims recurrent_dims(const Layer &l) {
    RecurrentDims d;
    d.F = l.in.c;
    d.T = l.in.h;
    d.H = l.units;
    d.G = l.kind == OpKind::lstm ? 4 : 3;
    d.dirs = l.bidirectional ? 2 : 1;
    d.bias = l.bias;
    d.last = l.last;
    return d;
}

// Direction d's kept values for a batch of n in a node's aux.
struct RecurrentKept {
    float *gates, *cell, *h;
};
inline RecurrentKept recurrent_kept(const RecurrentDims &d, float *aux, int64_t n, int64_t dir) {
    float *base = aux + size_t(dir) * size_t(n) * d.aux_per_dir();
    const size_t steps = size_t(n * d.T);
    return {base, base + steps * size_t(d.GH()), base + steps * size_t(d.GH() + d.H)};
}

// The workspace of one call for a batch of n (floats), reused by each
// direction in turn: zeros [n][H] (the state before the first iteration),
// then
//   forward:  xp [n*T][G*H] (x W_ih^T, rows in [n][T] order), hp [n][G*H]
//             (h W_hh^T of one iteration)
//   backward: dxp [n*T][G*H] (gradients of the input parts, [n][T] order),
//             dhp [T][n][G*H] (of the recurrent parts, iteration order),
//             dh, dh_next, dc [n][H]
struct RecurrentWork {
    float *zeros, *xp, *hp;
    float *dxp, *dhp, *dh, *dh_next, *dc;
};
inline size_t recurrent_workspace_floats(const RecurrentDims &d, int64_t n, bool backward) {
    const size_t nt = size_t(n * d.T), gh = size_t(d.GH()), h = size_t(n * d.H);
    return h + (backward ? 2 * nt * gh + 3 * h : nt * gh + size_t(n) * gh);
}
inline RecurrentWork recurrent_work(const RecurrentDims &d, float *ws, int64_t n) {
    const size_t nt = size_t(n * d.T), gh = size_t(d.GH()), h = size_t(n * d.H);
    RecurrentWork w{};
    w.zeros = ws;
    w.xp = ws + h;
    w.hp = w.xp + nt * gh;
    w.dxp = ws + h;
    w.dhp = w.dxp + nt * gh;
    w.dh = w.dhp + nt * gh;
    w.dh_next = w.dh + h;
    w.dc = w.dh_next + h;
    return w;
}

// The descriptor's parts, for 'lstm H [bidirectional] [last] [nobias]' and
// 'gru ...'.
void recurrent_parse(const Statement &st, Layer &l, const char *op);
void recurrent_infer(Layer &l, const std::vector<Layer> &layers, size_t index);
std::string recurrent_describe(const Layer &l, const char *op);
// Every parameter uniform in [-1/sqrt(H), 1/sqrt(H)], as PyTorch (no state).
void recurrent_init(const Layer &l, uint64_t seed, float *params, float *state);

}  // namespace snn
