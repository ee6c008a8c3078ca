// The GRU op (ops/gru.cpp) on CUDA: the cuBLAS time loop of
// cuda/recurrent.cuh with these gate kernels, one thread per element
// (sample s, unit j) of an iteration, the cell math of core/math.h. Gate
// rows are r, z, n; the kept cell value is hn = h_prev W_hn^T + b_hn.
#include "recurrent.cuh"

namespace snn {
namespace cu {
namespace {

// Active sample: (r, z, n, h) = gru_cell(xp[t] + b_ih, hp + b_hh, h_prev) ;
// cell = hn ; y[t] = h unless last. Past its length: gates 0, h carried on
// (cell too), y[k] = 0 unless last.
__global__ void gru_forward_kernel(RecurrentStep st, RecurrentForward f) {
    const int64_t H = st.H, total = st.n * H;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t s = e / H, j = e - s * H;
        const int32_t len = st.lengths ? st.lengths[s] : (int32_t)st.T;
        const int64_t t = recurrent_step(st.k, len, st.reverse);
        float *gates = f.gates + s * 3 * H;
        float h = 0.0f;
        if (recurrent_active(st.k, len)) {
            const float *xp = f.xp + (s * st.T + t) * 3 * H, *hp = f.hp + s * 3 * H;
            float x[3], r[3];
            for (int64_t q = 0; q < 3; ++q) {
                x[q] = xp[q * H + j] + (f.b_ih ? f.b_ih[q * H + j] : 0.0f);
                r[q] = hp[q * H + j] + (f.b_hh ? f.b_hh[q * H + j] : 0.0f);
            }
            const GruCell c = gru_cell(x[0], x[1], x[2], r[0], r[1], r[2], f.h_prev[e]);
            gates[j] = c.r;
            gates[H + j] = c.z;
            gates[2 * H + j] = c.n;
            f.cell[e] = r[2];
            f.h[e] = c.h;
            h = c.h;
        } else {
            for (int64_t q = 0; q < 3; ++q) gates[q * H + j] = 0.0f;
            f.cell[e] = f.cell_prev[e];
            f.h[e] = f.h_prev[e];
        }
        if (!st.last) f.y[(s * st.T + t) * st.out_stride + st.out_offset + j] = h;
    }
}

// Active sample: g = gru_cell_grad(gates, hn, h_prev, dh + dy[t]) ;
// dxp[t] = (zr, zz, zn) ; dhp = (zr, zz, zn r) ; dh_prev's direct part dh z.
// Past its length: dxp[k] = dhp = 0 ; dh_prev = dh.
__global__ void gru_backward_kernel(RecurrentStep st, RecurrentBackward b) {
    const int64_t H = st.H, total = st.n * H;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t s = e / H, j = e - s * H;
        const int32_t len = st.lengths ? st.lengths[s] : (int32_t)st.T;
        const int64_t t = recurrent_step(st.k, len, st.reverse);
        float *dxp = b.dxp + (s * st.T + t) * 3 * H, *dhp = b.dhp + s * 3 * H;
        if (recurrent_active(st.k, len)) {
            const float *gates = b.gates + s * 3 * H;
            const int64_t out = (s * st.T + t) * st.out_stride + st.out_offset + j;
            const float dh = st.last ? b.dh[e] : b.dh[e] + b.dy[out];
            const GruCellGrad g =
                gru_cell_grad(gates[j], gates[H + j], gates[2 * H + j], b.cell[e], b.h_prev[e], dh);
            dxp[j] = g.zr;
            dhp[j] = g.zr;
            dxp[H + j] = g.zz;
            dhp[H + j] = g.zz;
            dxp[2 * H + j] = g.zn;
            dhp[2 * H + j] = g.hn;
            b.dh_prev[e] = g.h_prev;
        } else {
            for (int64_t q = 0; q < 3; ++q) {
                dxp[q * H + j] = 0.0f;
                dhp[q * H + j] = 0.0f;
            }
            b.dh_prev[e] = b.dh[e];
        }
    }
}

struct Gru {
    static void forward(cudaStream_t stream, const RecurrentStep &st, const RecurrentForward &f) {
        SNN_LAUNCH(gru_forward_kernel, blocks_for(size_t(st.n * st.H)), kThreads, stream, st, f);
        check_launch("gru_forward kernel");
    }
    static void backward(cudaStream_t stream, const RecurrentStep &st, const RecurrentBackward &b) {
        SNN_LAUNCH(gru_backward_kernel, blocks_for(size_t(st.n * st.H)), kThreads, stream, st, b);
        check_launch("gru_backward kernel");
    }
};

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_gru = cu::recurrent_kernels<cu::Gru>();

}  // namespace snn
