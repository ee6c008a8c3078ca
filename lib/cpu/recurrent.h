// The time loop of the recurrent ops on the CPU (lstm, gru), for a cell
// type that gives the per-row gate passes (cpu/lstm.cpp, cpu/gru.cpp). Per
// direction: the input parts of every step in one sgemm, then per iteration
// one sgemm of the previous hidden states by W_hh and one fused pass over
// the batch's rows; backward the mirror, with W_ih's and W_hh's gradients
// and the input gradient one sgemm each after the loop. Lengths, the
// direction and `last` are handled here (ops/recurrent.h, engine/math.h's
// recurrent_step); a cell sees only rows of active samples.
//
// A Cell has
//   forward(H, xp, hp, b_ih, b_hh, cell_prev, h_prev, gates, cell, h)
//     one sample's step from its input part xp [G*H], recurrent part hp
//     [G*H] (biases null with nobias): writes gates, cell and h [H]
//   backward(H, gates, cell, cell_prev, h_prev, dh, dy, dc, dxp, dhp, dh_prev)
//     its gradients: dh (from later steps) plus dy (the output's, or null),
//     dc in and out (lstm's cell gradient), the gradients of the input and
//     recurrent parts dxp, dhp [G*H], and dh_prev's direct part [H] (the
//     rest, dhp W_hh, is added by the loop).
#pragma once

#include <string.h>

#include "cpu/cpu_backend.h"
#include "engine/math.h"
#include "ops/op.h"
#include "ops/recurrent.h"

namespace snn {

namespace recurrent_cpu {

inline int32_t length_of(const OpArgs &a, int64_t s, int64_t T) { return a.lengths ? a.lengths[s] : int32_t(T); }

// sums[j] = sum over rows of m[r][j] (rows in order)
inline void column_sums(const float *m, int64_t rows, int64_t cols, float *sums) {
    memset(sums, 0, size_t(cols) * sizeof(float));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) sums[j] += m[r * cols + j];
}

template <class Cell>
void *plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, size_t *workspace_bytes) {
    *workspace_bytes = recurrent_workspace_floats(recurrent_dims(l), max_batch, backward) * sizeof(float);
    return nullptr;
}

// xp = x W_ih^T ; per iteration k: hp = h_{k-1} W_hh^T, then each sample's
// cell step (or, past its length, its state carried on); y the states at
// their steps (0 at padded ones) or, with last, the state of iteration T-1.
template <class Cell>
void forward(const OpArgs &a) {
    const RecurrentDims d = recurrent_dims(*a.l);
    const int64_t n = a.n, T = d.T, H = d.H, GH = d.GH(), DH = d.out_features();
    const float *W = a.params + a.l->weight_offset;
    const RecurrentWork w = recurrent_work(d, static_cast<float *>(a.workspace), n);
    memset(w.zeros, 0, size_t(n * H) * sizeof(float));
    for (int64_t dir = 0; dir < d.dirs; ++dir) {
        const bool reverse = dir == 1;
        const RecurrentKept kept = recurrent_kept(d, a.aux + a.l->aux_fixed, n, dir);
        const float *b_ih = d.bias ? W + d.b_ih(dir) : nullptr, *b_hh = d.bias ? W + d.b_hh(dir) : nullptr;
        gemm_nt(n * T, GH, d.F, a.x[0], d.F, W + d.w_ih(dir), d.F, w.xp, GH, false);
        for (int64_t k = 0; k < T; ++k) {
            const float *h_prev = k ? kept.h + (k - 1) * n * H : w.zeros;
            const float *cell_prev = k ? kept.cell + (k - 1) * n * H : w.zeros;
            if (k)
                gemm_nt(n, GH, H, h_prev, H, W + d.w_hh(dir), H, w.hp, GH, false);
            else
                memset(w.hp, 0, size_t(n * GH) * sizeof(float));
            for (int64_t s = 0; s < n; ++s) {
                const int32_t len = length_of(a, s, T);
                const int64_t t = recurrent_step(k, len, reverse), row = k * n + s;
                float *h = kept.h + row * H;
                if (recurrent_active(k, len)) {
                    Cell::forward(H, w.xp + (s * T + t) * GH, w.hp + s * GH, b_ih, b_hh, cell_prev + s * H,
                                  h_prev + s * H, kept.gates + row * GH, kept.cell + row * H, h);
                } else {
                    memset(kept.gates + row * GH, 0, size_t(GH) * sizeof(float));
                    memcpy(kept.cell + row * H, cell_prev + s * H, size_t(H) * sizeof(float));
                    memcpy(h, h_prev + s * H, size_t(H) * sizeof(float));
                }
                if (d.last) continue;
                float *y = a.y + (s * T + t) * DH + dir * H;
                if (recurrent_active(k, len))
                    memcpy(y, h, size_t(H) * sizeof(float));
                else
                    memset(y, 0, size_t(H) * sizeof(float));
            }
        }
        if (d.last)
            for (int64_t s = 0; s < n; ++s)
                memcpy(a.y + s * DH + dir * H, kept.h + ((T - 1) * n + s) * H, size_t(H) * sizeof(float));
    }
}

// Per iteration k from T-1 down: each active sample's cell gradients (dxp
// at its step, dhp at k), then dh_{k-1} = direct part + dhp_k W_hh. After
// the loop: dW_ih = dxp^T x, dW_hh = sum_k dhp_k^T h_{k-1}, the biases'
// column sums, dx (+)= dxp W_ih.
template <class Cell>
void backward(const OpArgs &a) {
    const RecurrentDims d = recurrent_dims(*a.l);
    const int64_t n = a.n, T = d.T, H = d.H, GH = d.GH(), DH = d.out_features();
    const float *W = a.params + a.l->weight_offset;
    float *dW = a.grads + a.l->weight_offset;
    const RecurrentWork w = recurrent_work(d, static_cast<float *>(a.workspace), n);
    memset(w.zeros, 0, size_t(n * H) * sizeof(float));
    for (int64_t dir = 0; dir < d.dirs; ++dir) {
        const bool reverse = dir == 1;
        const RecurrentKept kept = recurrent_kept(d, a.aux + a.l->aux_fixed, n, dir);
        float *dh = w.dh, *dh_next = w.dh_next;
        memset(w.dc, 0, size_t(n * H) * sizeof(float));
        for (int64_t s = 0; s < n; ++s)
            if (d.last)
                memcpy(dh + s * H, a.dy + s * DH + dir * H, size_t(H) * sizeof(float));
            else
                memset(dh + s * H, 0, size_t(H) * sizeof(float));
        for (int64_t k = T - 1; k >= 0; --k) {
            const float *h_prev = k ? kept.h + (k - 1) * n * H : w.zeros;
            const float *cell_prev = k ? kept.cell + (k - 1) * n * H : w.zeros;
            for (int64_t s = 0; s < n; ++s) {
                const int32_t len = length_of(a, s, T);
                const int64_t t = recurrent_step(k, len, reverse), row = k * n + s;
                float *dxp = w.dxp + (s * T + t) * GH, *dhp = w.dhp + row * GH;
                if (recurrent_active(k, len)) {
                    const float *dy = d.last ? nullptr : a.dy + (s * T + t) * DH + dir * H;
                    Cell::backward(H, kept.gates + row * GH, kept.cell + row * H, cell_prev + s * H,
                                   h_prev + s * H, dh + s * H, dy, w.dc + s * H, dxp, dhp, dh_next + s * H);
                } else {
                    memset(dxp, 0, size_t(GH) * sizeof(float));
                    memset(dhp, 0, size_t(GH) * sizeof(float));
                    memcpy(dh_next + s * H, dh + s * H, size_t(H) * sizeof(float));
                }
            }
            if (k) gemm_nn(n, H, GH, w.dhp + k * n * GH, GH, W + d.w_hh(dir), H, dh_next, H, true);
            float *swap = dh;
            dh = dh_next;
            dh_next = swap;
        }
        gemm_tn(GH, d.F, n * T, w.dxp, GH, a.x[0], d.F, dW + d.w_ih(dir), d.F, false);
        if (T > 1)
            gemm_tn(GH, H, (T - 1) * n, w.dhp + n * GH, GH, kept.h, H, dW + d.w_hh(dir), H, false);
        else
            memset(dW + d.w_hh(dir), 0, size_t(GH * H) * sizeof(float));
        if (d.bias) {
            column_sums(w.dxp, n * T, GH, dW + d.b_ih(dir));
            column_sums(w.dhp, n * T, GH, dW + d.b_hh(dir));
        }
        if (a.dx[0]) gemm_nn(n * T, d.F, GH, w.dxp, GH, W + d.w_ih(dir), d.F, a.dx[0], d.F, dir > 0);
    }
}

}  // namespace recurrent_cpu

template <class Cell>
constexpr OpKernels recurrent_cpu_kernels() {
    return {recurrent_cpu::plan<Cell>, nullptr, recurrent_cpu::forward<Cell>, recurrent_cpu::backward<Cell>};
}

}  // namespace snn
