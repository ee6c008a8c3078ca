// The time loop of the recurrent ops on the CPU (lstm, gru), for a cell
// type that gives the per-row gate passes (cpu/lstm.cpp, cpu/gru.cpp). Per
// direction: the input parts of every step in one sgemm; then the batch is
// split over the CPU threads, each running the whole time loop for its
// samples (per iteration one sgemm of its previous hidden states by W_hh
// and one fused pass over its rows), so the threads meet once per
// direction rather than at every step; backward the mirror, with W_ih's and
// W_hh's gradients and the input gradient one sgemm each after the loop.
// Lengths, the direction and `last` are handled here (ops/recurrent.h,
// core/math.h's recurrent_step); a cell sees only rows of active samples.
// Results depend on the thread count only through the row blocks of the
// per-step products, so they are deterministic for a fixed one.
//
// At bf16 every product takes gemm_bf16 (operands rounded to bf16, float32
// sums): the input part, the gradients after the loop, and the per-step
// products, for which W_hh is packed once per direction and pass and each
// thread packs its rows of h (or dhp) into its own region of the workspace.
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

#include <algorithm>
#include <new>

#include "common/error.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm512.h"
#include "cpu/gemm_bf16.h"
#include "cpu/thread_pool.h"
#include "core/math.h"
#include "ops/op.h"
#include "ops/recurrent.h"

namespace snn {

namespace recurrent_cpu {

inline int32_t length_of(const int32_t *lengths, int64_t s, int64_t T) { return lengths ? lengths[s] : int32_t(T); }

// sums[j] = sum over rows of m[r][j] (rows in order)
inline void column_sums(const float *m, int64_t rows, int64_t cols, float *sums) {
    memset(sums, 0, size_t(cols) * sizeof(float));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) sums[j] += m[r * cols + j];
}

// Below this many multiply-adds per direction and pass the time loop runs
// on the calling thread alone.
constexpr int64_t kParallelRecurrent = 1 << 20;
inline int32_t workers_for(const RecurrentDims &d, int64_t n) {
    return n * d.T * d.H * d.GH() >= kParallelRecurrent ? cpu_threads() : 1;
}

// The per-iteration products of one thread's rows (no further split):
//   forward   hp[M][GH] = h[M][H] W_hh^T
//   backward  dh[M][H] += dhp[M][GH] W_hh
// With AVX-512 (gemm512_available) both are gemm512's direct product, which
// reads its operands in place: the forward one from W_hh^T, transposed once
// per pass into the workspace (w_hh_t), where a packed product would pack
// W_hh again at every iteration, about as long as the product itself at
// these sizes. Otherwise small ones run in plain loops, larger ones by the
// products' table (gemm_nt, gemm_nn; inside the time loop's worker, on its
// thread).
constexpr int64_t kSmallProduct = 48 * 1024;
inline void step_forward_product(int64_t M, int64_t GH, int64_t H, const float *h, const float *w_hh,
                                 const float *w_hh_t, float *hp) {
    if (w_hh_t)
        gemm512_nn_direct(M, GH, H, h, H, w_hh_t, GH, hp, GH, false);
    else if (M * GH * H <= kSmallProduct)
        small_gemm_nt(M, GH, H, h, H, w_hh, H, hp, GH, false);
    else
        gemm_nt(M, GH, H, h, H, w_hh, H, hp, GH, /*accumulate=*/false, /*scratch=*/nullptr);
}
inline void step_backward_product(int64_t M, int64_t H, int64_t GH, const float *dhp, const float *w_hh, float *dh,
                                  bool direct) {
    if (direct)
        gemm512_nn_direct(M, H, GH, dhp, GH, w_hh, H, dh, H, true);
    else if (M * H * GH <= kSmallProduct)
        small_gemm_nn(M, H, GH, dhp, GH, w_hh, H, dh, H, true);
    else
        gemm_nn(M, H, GH, dhp, GH, w_hh, H, dh, H, /*accumulate=*/true);
}

// The threads planned for: the time loops run on at most this many.
struct Plan {
    int32_t workers;
};

// At bf16, the packing regions after the float32 workspace: the products
// outside the loop, W_hh packed for the per-step products, then one region
// per thread for its rows of h (forward) or dhp (backward) at each step:
// thread w's at rows_bytes(begin) + w * slack_bytes, room for gemm_bf16's
// packing of end - begin rows.
struct Bf16Work {
    char *outer = nullptr, *w_hh = nullptr, *rows = nullptr;
    int64_t depth = 0;  // K of the per-step product: H forward, G*H backward
    size_t row_bytes(int64_t rows_before) const { return size_t(rows_before * depth) * sizeof(float); }
    size_t slack_bytes() const { return size_t(16 * depth) * sizeof(float) + 64; }
    void *rows_of(int64_t begin, int32_t worker) const { return rows + row_bytes(begin) + size_t(worker) * slack_bytes(); }
};

inline size_t outer_pack_bytes(const RecurrentDims &d, int64_t n, bool backward) {
    const int64_t nt = n * d.T, gh = d.GH();
    if (!backward) return gemm_bf16_bytes(nt, gh, d.F);
    return std::max({gemm_bf16_bytes(gh, d.F, nt), gemm_bf16_bytes(gh, d.H, nt), gemm_bf16_bytes(nt, d.F, gh)});
}

inline size_t bf16_bytes(const RecurrentDims &d, int64_t n, bool backward, int32_t workers) {
    Bf16Work b;
    b.depth = backward ? d.GH() : d.H;
    return outer_pack_bytes(d, n, backward) + gemm_bf16_b_bytes(b.depth, backward ? d.H : d.GH()) + b.row_bytes(n) +
           size_t(workers) * b.slack_bytes();
}

// One direction of one pass, shared by the threads.
struct Pass {
    const OpArgs *a;
    RecurrentDims d;
    RecurrentWork w;
    RecurrentKept kept;
    const float *W;  // the node's parameters
    float *w_hh_t;   // W_hh^T [H][G*H] for gemm512, or null
    int64_t dir;
    int32_t workers;  // threads of the time loop
    Bf16Work bf16;    // at bf16
};

// The CPU's workspace: room for W_hh^T, then ops/recurrent.h's layout, then
// at bf16 the packing (Bf16Work).
inline size_t transposed_floats(const RecurrentDims &d) { return size_t(d.GH() * d.H); }
inline Pass pass_of(const OpArgs &a, bool backward) {
    Pass p{};
    p.a = &a;
    p.d = recurrent_dims(*a.l);
    p.W = a.params + a.l->weight_offset;
    float *ws = static_cast<float *>(a.workspace);
    p.w_hh_t = gemm512_available() && a.precision != Precision::bf16 ? ws : nullptr;
    p.w = recurrent_work(p.d, ws + transposed_floats(p.d), a.n);
    memset(p.w.zeros, 0, size_t(a.n * p.d.H) * sizeof(float));
    const int32_t planned = static_cast<const Plan *>(a.plan)->workers;
    p.workers = std::min(workers_for(p.d, a.n), planned);
    if (a.precision == Precision::bf16) {
        char *base = reinterpret_cast<char *>(ws + transposed_floats(p.d) + recurrent_workspace_floats(p.d, a.n, backward));
        p.bf16.depth = backward ? p.d.GH() : p.d.H;
        p.bf16.outer = base;
        p.bf16.w_hh = base + outer_pack_bytes(p.d, a.n, backward);
        p.bf16.rows = p.bf16.w_hh + gemm_bf16_b_bytes(p.bf16.depth, backward ? p.d.H : p.d.GH());
    }
    return p;
}

template <class Cell>
void *plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision precision,
           size_t *workspace_bytes) {
    const RecurrentDims d = recurrent_dims(l);
    const int32_t workers = std::max<int32_t>(1, int32_t(std::min<int64_t>(cpu_threads(), max_batch)));
    *workspace_bytes = (transposed_floats(d) + recurrent_workspace_floats(d, max_batch, backward)) * sizeof(float);
    if (precision == Precision::bf16) *workspace_bytes += bf16_bytes(d, max_batch, backward, workers);
    Plan *p = new (std::nothrow) Plan{workers};
    if (!p) fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory");
    return p;
}

inline void release(Backend &, void *plan) { delete static_cast<Plan *>(plan); }

// A thread's samples [begin, end) through iterations 0..T-1: hp =
// h_{k-1} W_hh^T, then each one's cell step at its step t (or, past its
// length, its state carried on); y at t the state (0 at padded steps), or
// with last the state of iteration T-1.
template <class Cell>
void forward_samples(void *ctx, int32_t worker, int32_t workers) {
    const Pass &p = *static_cast<const Pass *>(ctx);
    const RecurrentDims &d = p.d;
    const OpArgs &a = *p.a;
    const int64_t n = a.n, T = d.T, H = d.H, GH = d.GH(), DH = d.out_features();
    int64_t begin, end;
    split_range(n, workers, worker, &begin, &end);
    if (begin == end) return;
    const float *b_ih = d.bias ? p.W + d.b_ih(p.dir) : nullptr, *b_hh = d.bias ? p.W + d.b_hh(p.dir) : nullptr;
    for (int64_t k = 0; k < T; ++k) {
        const float *h_prev = k ? p.kept.h + (k - 1) * n * H : p.w.zeros;
        const float *cell_prev = k ? p.kept.cell + (k - 1) * n * H : p.w.zeros;
        float *hp = p.w.hp + begin * GH;
        if (k && p.bf16.rows) {
            void *rows = p.bf16.rows_of(begin, worker);
            gemm_bf16_pack_a(false, end - begin, H, h_prev + begin * H, H, rows);
            gemm_bf16_packed(end - begin, GH, H, rows, p.bf16.w_hh, hp, GH, false);
        } else if (k) {
            step_forward_product(end - begin, GH, H, h_prev + begin * H, p.W + d.w_hh(p.dir), p.w_hh_t, hp);
        } else {
            memset(hp, 0, size_t((end - begin) * GH) * sizeof(float));
        }
        for (int64_t s = begin; s < end; ++s) {
            const int32_t len = length_of(a.lengths, s, T);
            const int64_t t = recurrent_step(k, len, p.dir == 1), row = k * n + s;
            float *h = p.kept.h + row * H;
            if (recurrent_active(k, len)) {
                Cell::forward(H, p.w.xp + (s * T + t) * GH, p.w.hp + s * GH, b_ih, b_hh, cell_prev + s * H,
                              h_prev + s * H, p.kept.gates + row * GH, p.kept.cell + row * H, h);
            } else {
                memset(p.kept.gates + row * GH, 0, size_t(GH) * sizeof(float));
                memcpy(p.kept.cell + row * H, cell_prev + s * H, size_t(H) * sizeof(float));
                memcpy(h, h_prev + s * H, size_t(H) * sizeof(float));
            }
            if (d.last) continue;
            float *y = a.y + (s * T + t) * DH + p.dir * H;
            if (recurrent_active(k, len))
                memcpy(y, h, size_t(H) * sizeof(float));
            else
                memset(y, 0, size_t(H) * sizeof(float));
        }
    }
    if (d.last)
        for (int64_t s = begin; s < end; ++s)
            memcpy(a.y + s * DH + p.dir * H, p.kept.h + ((T - 1) * n + s) * H, size_t(H) * sizeof(float));
}

// xp = x W_ih^T, then the time loop, the batch split over the threads.
template <class Cell>
void forward(const OpArgs &a) {
    Pass p = pass_of(a, false);
    const int64_t n = a.n, GH = p.d.GH();
    for (p.dir = 0; p.dir < p.d.dirs; ++p.dir) {
        p.kept = recurrent_kept(p.d, a.aux + a.l->aux_fixed, n, p.dir);
        if (p.w_hh_t) small_transpose(GH, p.d.H, p.W + p.d.w_hh(p.dir), p.d.H, p.w_hh_t);
        if (p.bf16.w_hh) gemm_bf16_pack_b(true, p.d.H, GH, p.W + p.d.w_hh(p.dir), p.d.H, p.bf16.w_hh);
        gemm_at(a.precision, false, true, n * p.d.T, GH, p.d.F, a.x[0], p.d.F, p.W + p.d.w_ih(p.dir), p.d.F, p.w.xp,
                GH, false, p.bf16.outer);
        parallel_run(p.workers, forward_samples<Cell>, &p);
    }
}

// A thread's samples [begin, end) through iterations T-1..0: each active
// one's cell gradients (dxp at its step t, dhp at k, the direct part of
// dh_prev; past its length zeros, dh carried on), then
// dh_{k-1} = direct part + dhp_k W_hh.
template <class Cell>
void backward_samples(void *ctx, int32_t worker, int32_t workers) {
    const Pass &p = *static_cast<const Pass *>(ctx);
    const RecurrentDims &d = p.d;
    const OpArgs &a = *p.a;
    const int64_t n = a.n, T = d.T, H = d.H, GH = d.GH(), DH = d.out_features();
    int64_t begin, end;
    split_range(n, workers, worker, &begin, &end);
    if (begin == end) return;
    float *dh = p.w.dh, *dh_next = p.w.dh_next;
    memset(p.w.dc + begin * H, 0, size_t((end - begin) * H) * sizeof(float));
    for (int64_t s = begin; s < end; ++s)
        if (d.last)
            memcpy(dh + s * H, a.dy + s * DH + p.dir * H, size_t(H) * sizeof(float));
        else
            memset(dh + s * H, 0, size_t(H) * sizeof(float));
    for (int64_t k = T - 1; k >= 0; --k) {
        const float *h_prev = k ? p.kept.h + (k - 1) * n * H : p.w.zeros;
        const float *cell_prev = k ? p.kept.cell + (k - 1) * n * H : p.w.zeros;
        for (int64_t s = begin; s < end; ++s) {
            const int32_t len = length_of(a.lengths, s, T);
            const int64_t t = recurrent_step(k, len, p.dir == 1), row = k * n + s;
            float *dxp = p.w.dxp + (s * T + t) * GH, *dhp = p.w.dhp + row * GH;
            if (recurrent_active(k, len)) {
                const float *dy = d.last ? nullptr : a.dy + (s * T + t) * DH + p.dir * H;
                Cell::backward(H, p.kept.gates + row * GH, p.kept.cell + row * H, cell_prev + s * H,
                               h_prev + s * H, dh + s * H, dy, p.w.dc + s * H, dxp, dhp, dh_next + s * H);
            } else {
                memset(dxp, 0, size_t(GH) * sizeof(float));
                memset(dhp, 0, size_t(GH) * sizeof(float));
                memcpy(dh_next + s * H, dh + s * H, size_t(H) * sizeof(float));
            }
        }
        if (k && p.bf16.rows) {
            void *rows = p.bf16.rows_of(begin, worker);
            gemm_bf16_pack_a(false, end - begin, GH, p.w.dhp + (k * n + begin) * GH, GH, rows);
            gemm_bf16_packed(end - begin, H, GH, rows, p.bf16.w_hh, dh_next + begin * H, H, true);
        } else if (k) {
            step_backward_product(end - begin, H, GH, p.w.dhp + (k * n + begin) * GH, p.W + d.w_hh(p.dir),
                                  dh_next + begin * H, p.w_hh_t != nullptr);
        }
        float *swap = dh;
        dh = dh_next;
        dh_next = swap;
    }
}

// The time loop backward, the batch split over the threads; then
// dW_ih = dxp^T x, dW_hh = sum_k dhp_k^T h_{k-1}, the biases' column sums,
// dx (+)= dxp W_ih.
template <class Cell>
void backward(const OpArgs &a) {
    Pass p = pass_of(a, true);
    const RecurrentDims &d = p.d;
    const int64_t n = a.n, T = d.T, H = d.H, GH = d.GH();
    float *dW = a.grads + a.l->weight_offset;
    for (p.dir = 0; p.dir < d.dirs; ++p.dir) {
        p.kept = recurrent_kept(d, a.aux + a.l->aux_fixed, n, p.dir);
        if (p.bf16.w_hh) gemm_bf16_pack_b(false, GH, H, p.W + d.w_hh(p.dir), H, p.bf16.w_hh);
        parallel_run(p.workers, backward_samples<Cell>, &p);
        gemm_at(a.precision, true, false, GH, d.F, n * T, p.w.dxp, GH, a.x[0], d.F, dW + d.w_ih(p.dir), d.F, false,
                p.bf16.outer);
        if (T > 1)
            gemm_at(a.precision, true, false, GH, H, (T - 1) * n, p.w.dhp + n * GH, GH, p.kept.h, H,
                    dW + d.w_hh(p.dir), H, false, p.bf16.outer);
        else
            memset(dW + d.w_hh(p.dir), 0, size_t(GH * H) * sizeof(float));
        if (d.bias) {
            column_sums(p.w.dxp, n * T, GH, dW + d.b_ih(p.dir));
            column_sums(p.w.dhp, n * T, GH, dW + d.b_hh(p.dir));
        }
        if (a.dx[0])
            gemm_at(a.precision, false, false, n * T, d.F, GH, p.w.dxp, GH, p.W + d.w_ih(p.dir), d.F, a.dx[0], d.F,
                    p.dir > 0, p.bf16.outer);
    }
}

}  // namespace recurrent_cpu

template <class Cell>
constexpr OpKernels recurrent_cpu_kernels() {
    return {recurrent_cpu::plan<Cell>, recurrent_cpu::release, recurrent_cpu::forward<Cell>,
            recurrent_cpu::backward<Cell>, precision_bit(Precision::f32) | precision_bit(Precision::bf16)};
}

}  // namespace snn
