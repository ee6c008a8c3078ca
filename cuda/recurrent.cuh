// The time loop of the recurrent ops with cuBLAS (lstm, gru), for a cell
// type that launches the per-iteration gate kernels (cuda/lstm.cu,
// cuda/gru.cu); the same structure as the CPU's (cpu/recurrent.h), with the
// layouts of ops/recurrent.h. Per direction: the input parts of every step
// in one product, then per iteration one product h_{k-1} W_hh^T and one
// fused gate kernel over the batch's n*H elements; backward the mirror, the
// weight gradients and the input gradient one product each after the loop.
// Lengths are read by the kernels on the device; the host loop runs T
// iterations whatever they are.
//
// At bf16 and fp16 the products' operands are 16-bit copies after the
// float scratch (low_precision.h): the weights once per direction, h_{k-1}
// and dhp_k per iteration (dhp_k's copies serve dW_hh after the loop too).
//
// cuBLAS is column-major: a row-major A[r][c] is, read column-major, A^T
// (ld c); each product below is the row-major one on those transposes.
#pragma once

#include "low_precision.h"
#include "ops.h"
#include "ops/recurrent.h"

namespace snn {
namespace cu {

// What every gate kernel of one iteration k of a direction reads.
struct RecurrentStep {
    int64_t n, T, H, k;
    int64_t out_stride, out_offset;  // y's floats per step (dirs * H), this direction's first (dir * H)
    int32_t reverse, last;
    const int32_t *lengths;          // [n], or null: every sample has T steps
};

// The forward kernels' buffers (ops/recurrent.h): xp [n*T][G*H] of every
// step, hp [n][G*H] of this iteration, the biases (null with nobias), the
// previous iteration's cell and h [n][H], this iteration's kept gates
// [n][G*H], cell and h [n][H], and the whole output y.
struct RecurrentForward {
    const float *xp, *hp, *b_ih, *b_hh, *cell_prev, *h_prev;
    float *gates, *cell, *h, *y;
};

// The backward kernels': this iteration's kept values and the previous
// iteration's cell and h, dh [n][H] from later iterations, the whole output
// gradient dy (unused with last), dc [n][H] in and out, dxp [n*T][G*H] of
// every step, dhp [n][G*H] of this iteration, dh_prev [n][H] (the direct
// part of the previous state's gradient).
struct RecurrentBackward {
    const float *gates, *cell, *cell_prev, *h_prev, *dh, *dy;
    float *dc, *dxp, *dhp, *dh_prev;
};

// Row-major C[M][N] (+)= A[M][K] B[N][K]^T: C^T = op_T(B) A^T.
inline void gemm_nt(CudaStream &cs, Precision p, int64_t M, int64_t N, int64_t K, const void *A, int64_t lda,
                    const void *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, const char *what) {
    gemm_at(cs, p, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, 1.0f, B, ldb, A, lda, accumulate ? 1.0f : 0.0f, C, ldc, what);
}
// Row-major C[M][N] = A[K][M]^T B[K][N]: C^T = B^T op_T(A^T).
inline void gemm_tn(CudaStream &cs, Precision p, int64_t M, int64_t N, int64_t K, const void *A, int64_t lda,
                    const void *B, int64_t ldb, float *C, int64_t ldc, const char *what) {
    gemm_at(cs, p, CUBLAS_OP_N, CUBLAS_OP_T, N, M, K, 1.0f, B, ldb, A, lda, 0.0f, C, ldc, what);
}
// Row-major C[M][N] (+)= A[M][K] B[K][N]: C^T = B^T A^T.
inline void gemm_nn(CudaStream &cs, Precision p, int64_t M, int64_t N, int64_t K, const void *A, int64_t lda,
                    const void *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, const char *what) {
    gemm_at(cs, p, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, 1.0f, B, ldb, A, lda, accumulate ? 1.0f : 0.0f, C, ldc, what);
}

// The float scratch of ops/recurrent.h, where the 16-bit copies start.
inline size_t recurrent_float_bytes(const RecurrentDims &d, int64_t n, bool backward) {
    return aligned16(recurrent_workspace_floats(d, n, backward) * sizeof(float));
}

// The 16-bit copies: forward W_ih, W_hh, x and h_{k-1}; backward W_ih,
// W_hh, x, dhp of every iteration, dxp and the kept h.
template <class Cell>
void *recurrent_plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision p,
                     size_t *workspace_bytes) {
    const RecurrentDims d = recurrent_dims(l);
    const size_t gh = size_t(d.GH()), nt = size_t(max_batch * d.T), h = size_t(max_batch * d.H);
    const size_t weights = gh * size_t(d.F), hidden = gh * size_t(d.H), x = nt * size_t(d.F);
    *workspace_bytes = recurrent_float_bytes(d, max_batch, backward) +
                       (backward ? low_bytes(p, {weights, hidden, x, nt * gh, nt * gh, nt * size_t(d.H)})
                                 : low_bytes(p, {weights, hidden, x, h}));
    return nullptr;
}

// xp = x W_ih^T ; per iteration k: hp = h_{k-1} W_hh^T, then the gate
// kernel; with last, y = the states of iteration T-1.
template <class Cell>
void recurrent_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const RecurrentDims d = recurrent_dims(*a.l);
    const int64_t n = a.n, T = d.T, H = d.H, GH = d.GH(), DH = d.out_features();
    if (n <= 0) return;
    const Precision p = a.precision;
    const float *W = a.params + a.l->weight_offset;
    const RecurrentWork w = recurrent_work(d, static_cast<float *>(a.workspace), n);
    LowScratch low(p, a.workspace, recurrent_float_bytes(d, n, false));
    uint16_t *w_ih16 = low.take(GH * d.F), *w_hh16 = low.take(GH * H);
    const void *x = operand(cs, p, a.x[0], size_t(n * T * d.F), low.take(n * T * d.F));
    uint16_t *h16 = low.take(n * H);
    fill_floats(cs.stream, w.zeros, 0.0f, size_t(n * H));
    for (int64_t dir = 0; dir < d.dirs; ++dir) {
        const RecurrentKept kept = recurrent_kept(d, aux_per_sample(a), n, dir);
        const void *w_ih = operand(cs, p, W + d.w_ih(dir), size_t(GH * d.F), w_ih16);
        const void *w_hh = operand(cs, p, W + d.w_hh(dir), size_t(GH * H), w_hh16);
        gemm_nt(cs, p, n * T, GH, d.F, x, d.F, w_ih, d.F, w.xp, GH, false, "cublasGemm (recurrent input projection)");
        RecurrentStep st{n, T, H, 0, DH, dir * H, dir == 1, d.last, a.lengths};
        RecurrentForward f{w.xp, w.hp, d.bias ? W + d.b_ih(dir) : nullptr, d.bias ? W + d.b_hh(dir) : nullptr,
                           nullptr, nullptr, nullptr, nullptr, nullptr, a.y};
        for (int64_t k = 0; k < T; ++k) {
            st.k = k;
            f.h_prev = k ? kept.h + (k - 1) * n * H : w.zeros;
            f.cell_prev = k ? kept.cell + (k - 1) * n * H : w.zeros;
            f.gates = kept.gates + k * n * GH;
            f.cell = kept.cell + k * n * H;
            f.h = kept.h + k * n * H;
            if (k)
                gemm_nt(cs, p, n, GH, H, operand(cs, p, f.h_prev, size_t(n * H), h16), H, w_hh, H, w.hp, GH, false,
                        "cublasGemm (recurrent step)");
            else
                fill_floats(cs.stream, w.hp, 0.0f, size_t(n * GH));
            Cell::forward(cs.stream, st, f);
        }
        if (d.last)
            a.be->copy2d(a.s, a.y + dir * H, size_t(DH) * sizeof(float), kept.h + (T - 1) * n * H,
                         size_t(H) * sizeof(float), size_t(H) * sizeof(float), size_t(n));
    }
}

// Per iteration k from T-1 down: the gate kernel (dxp at each sample's
// step, dhp at k, dh_prev's direct part), then dh_prev += dhp_k W_hh.
// After the loop: dW_ih = dxp^T x, dW_hh = sum_k dhp_k^T h_{k-1}, the
// biases' column sums, dx (+)= dxp W_ih.
template <class Cell>
void recurrent_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const RecurrentDims d = recurrent_dims(*a.l);
    const int64_t n = a.n, T = d.T, H = d.H, GH = d.GH(), DH = d.out_features();
    if (n <= 0) return;
    const Precision p = a.precision;
    const float *W = a.params + a.l->weight_offset;
    float *dW = a.grads + a.l->weight_offset;
    const RecurrentWork w = recurrent_work(d, static_cast<float *>(a.workspace), n);
    LowScratch low(p, a.workspace, recurrent_float_bytes(d, n, true));
    uint16_t *w_ih16 = low.take(GH * d.F), *w_hh16 = low.take(GH * H);
    const void *x = operand(cs, p, a.x[0], size_t(n * T * d.F), low.take(n * T * d.F));
    uint16_t *dhp16 = low.take(n * T * GH), *dxp16 = low.take(n * T * GH), *h16 = low.take(n * T * H);
    // Every iteration's dhp as an operand: w.dhp, or the copies made in the loop.
    const void *dhp = p == Precision::f32 ? static_cast<const void *>(w.dhp) : dhp16;
    fill_floats(cs.stream, w.zeros, 0.0f, size_t(n * H));
    for (int64_t dir = 0; dir < d.dirs; ++dir) {
        const RecurrentKept kept = recurrent_kept(d, aux_per_sample(a), n, dir);
        const void *w_hh = operand(cs, p, W + d.w_hh(dir), size_t(GH * H), w_hh16);
        float *dh = w.dh, *dh_next = w.dh_next;
        fill_floats(cs.stream, w.dc, 0.0f, size_t(n * H));
        if (d.last)
            a.be->copy2d(a.s, dh, size_t(H) * sizeof(float), a.dy + dir * H, size_t(DH) * sizeof(float),
                         size_t(H) * sizeof(float), size_t(n));
        else
            fill_floats(cs.stream, dh, 0.0f, size_t(n * H));
        RecurrentStep st{n, T, H, 0, DH, dir * H, dir == 1, d.last, a.lengths};
        RecurrentBackward b{nullptr, nullptr, nullptr, nullptr, nullptr, a.dy, w.dc, w.dxp, nullptr, nullptr};
        for (int64_t k = T - 1; k >= 0; --k) {
            st.k = k;
            b.gates = kept.gates + k * n * GH;
            b.cell = kept.cell + k * n * H;
            b.h_prev = k ? kept.h + (k - 1) * n * H : w.zeros;
            b.cell_prev = k ? kept.cell + (k - 1) * n * H : w.zeros;
            b.dh = dh;
            b.dhp = w.dhp + k * n * GH;
            b.dh_prev = dh_next;
            Cell::backward(cs.stream, st, b);
            if (k) {
                uint16_t *slot = p == Precision::f32 ? nullptr : dhp16 + k * n * GH;
                gemm_nn(cs, p, n, H, GH, operand(cs, p, b.dhp, size_t(n * GH), slot), GH, w_hh, H, dh_next, H, true,
                        "cublasGemm (recurrent state gradient)");
            }
            float *swap = dh;
            dh = dh_next;
            dh_next = swap;
        }
        const void *dxp = operand(cs, p, w.dxp, size_t(n * T * GH), dxp16);
        gemm_tn(cs, p, GH, d.F, n * T, dxp, GH, x, d.F, dW + d.w_ih(dir), d.F,
                "cublasGemm (recurrent input weight gradient)");
        if (T > 1)
            gemm_tn(cs, p, GH, H, (T - 1) * n, operand_at(p, dhp, n * GH), GH,
                    operand(cs, p, kept.h, size_t((T - 1) * n * H), h16), H, dW + d.w_hh(dir), H,
                    "cublasGemm (recurrent weight gradient)");
        else
            fill_floats(cs.stream, dW + d.w_hh(dir), 0.0f, size_t(GH * H));
        if (d.bias) {
            channel_sums(cs.stream, cs.sums, dW + d.b_ih(dir), w.dxp, n * T, GH, 1);
            channel_sums(cs.stream, cs.sums, dW + d.b_hh(dir), w.dhp, n * T, GH, 1);
        }
        if (a.dx[0])
            gemm_nn(cs, p, n * T, d.F, GH, dxp, GH, operand(cs, p, W + d.w_ih(dir), size_t(GH * d.F), w_ih16), d.F,
                    a.dx[0], d.F, dir > 0, "cublasGemm (recurrent input gradient)");
    }
}

template <class Cell>
constexpr OpKernels recurrent_kernels() {
    return {recurrent_plan<Cell>, nullptr, recurrent_forward<Cell>, recurrent_backward<Cell>, kAllPrecisions};
}

}  // namespace cu
}  // namespace snn
