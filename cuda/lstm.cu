// The LSTM op (ops/lstm.cpp) on CUDA: the cuBLAS time loop of
// cuda/recurrent.cuh with these gate kernels, one thread per element
// (sample s, unit j) of an iteration, the cell math of core/math.h. Gate
// rows are i, f, g, o.
#include "recurrent.cuh"

namespace snn {
namespace cu {
namespace {

// Active sample: z = xp + hp (+ b_ih + b_hh) per gate at its step t ;
// (i, f, g, o, c, h) = lstm_cell(z, c_prev) ; y[t] = h unless last.
// Past its length: gates 0, c and h carried on, y[k] = 0 unless last.
__global__ void lstm_forward_kernel(RecurrentStep st, RecurrentForward f) {
    const int64_t H = st.H, total = st.n * H;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t s = e / H, j = e - s * H;
        const int32_t len = st.lengths ? st.lengths[s] : (int32_t)st.T;
        const int64_t t = recurrent_step(st.k, len, st.reverse);
        float *gates = f.gates + s * 4 * H;
        float h = 0.0f;
        if (recurrent_active(st.k, len)) {
            const float *xp = f.xp + (s * st.T + t) * 4 * H, *hp = f.hp + s * 4 * H;
            float z[4];
            for (int64_t q = 0; q < 4; ++q)
                z[q] = xp[q * H + j] + hp[q * H + j] + (f.b_ih ? f.b_ih[q * H + j] + f.b_hh[q * H + j] : 0.0f);
            const LstmCell r = lstm_cell(z[0], z[1], z[2], z[3], f.cell_prev[e]);
            gates[j] = r.i;
            gates[H + j] = r.f;
            gates[2 * H + j] = r.g;
            gates[3 * H + j] = r.o;
            f.cell[e] = r.c;
            f.h[e] = r.h;
            h = r.h;
        } else {
            for (int64_t q = 0; q < 4; ++q) gates[q * H + j] = 0.0f;
            f.cell[e] = f.cell_prev[e];
            f.h[e] = f.h_prev[e];
        }
        if (!st.last) f.y[(s * st.T + t) * st.out_stride + st.out_offset + j] = h;
    }
}

// Active sample: dz = lstm_cell_grad(gates, c, c_prev, dh + dy[t], dc) ;
// dxp[t] = dhp = dz ; dc = dc_prev ; dh_prev's direct part 0.
// Past its length: dxp[k] = dhp = 0 ; dc kept ; dh_prev = dh.
__global__ void lstm_backward_kernel(RecurrentStep st, RecurrentBackward b) {
    const int64_t H = st.H, total = st.n * H;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t s = e / H, j = e - s * H;
        const int32_t len = st.lengths ? st.lengths[s] : (int32_t)st.T;
        const int64_t t = recurrent_step(st.k, len, st.reverse);
        float *dxp = b.dxp + (s * st.T + t) * 4 * H, *dhp = b.dhp + s * 4 * H;
        if (recurrent_active(st.k, len)) {
            const float *gates = b.gates + s * 4 * H;
            const int64_t out = (s * st.T + t) * st.out_stride + st.out_offset + j;
            const float dh = st.last ? b.dh[e] : b.dh[e] + b.dy[out];
            const LstmCellGrad g = lstm_cell_grad(gates[j], gates[H + j], gates[2 * H + j], gates[3 * H + j],
                                                  b.cell[e], b.cell_prev[e], dh, b.dc[e]);
            dxp[j] = g.zi;
            dhp[j] = g.zi;
            dxp[H + j] = g.zf;
            dhp[H + j] = g.zf;
            dxp[2 * H + j] = g.zg;
            dhp[2 * H + j] = g.zg;
            dxp[3 * H + j] = g.zo;
            dhp[3 * H + j] = g.zo;
            b.dc[e] = g.c_prev;
            b.dh_prev[e] = 0.0f;
        } else {
            for (int64_t q = 0; q < 4; ++q) {
                dxp[q * H + j] = 0.0f;
                dhp[q * H + j] = 0.0f;
            }
            b.dh_prev[e] = b.dh[e];
        }
    }
}

struct Lstm {
    static void forward(cudaStream_t stream, const RecurrentStep &st, const RecurrentForward &f) {
        SNN_LAUNCH(lstm_forward_kernel, blocks_for(size_t(st.n * st.H)), kThreads, stream, st, f);
        check_launch("lstm_forward kernel");
    }
    static void backward(cudaStream_t stream, const RecurrentStep &st, const RecurrentBackward &b) {
        SNN_LAUNCH(lstm_backward_kernel, blocks_for(size_t(st.n * st.H)), kThreads, stream, st, b);
        check_launch("lstm_backward kernel");
    }
};

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_lstm = cu::recurrent_kernels<cu::Lstm>();

}  // namespace snn
