// conv at bf16 and fp16 as lowered matrix products (conv_lowered.h). The
// lowering and its adjoint are one thread per value written, each summing
// in a fixed order.
#include <algorithm>

#include "conv_lowered.h"
#include "elementwise.h"
#include "low_precision.h"

namespace snn {
namespace cu {
namespace {

// A chunk's lowered values stay under this many; the chunk size depends on
// the shapes alone.
constexpr int64_t kLoweredBudget = int64_t(1) << 22;

int64_t taps(const ConvDims &d) { return d.cin * d.kh * d.kw; }
int64_t positions(const ConvDims &d) { return d.hout * d.wout; }
int64_t chunk_of(const ConvDims &d) { return std::max<int64_t>(1, kLoweredBudget / (taps(d) * positions(d))); }

SNN_HD uint16_t to_16(float v, bool half) { return half ? float_to_half(v) : float_to_bf16(v); }

// col[j][r], j = (c kh + ki) kw + kj, r = i hw + oh wout + ow:
// x[first + i][c][oh sh - ph + ki][ow sw - pw + kj], 0 in the padding.
__global__ void conv_lower_kernel(ConvDims d, const float *x, int64_t first, int64_t cols, size_t total,
                                  uint16_t *col, bool half) {
    const int64_t hw = d.hout * d.wout;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        const int64_t j = (int64_t)(e / (size_t)cols), r = (int64_t)(e % (size_t)cols);
        const int64_t c = j / (d.kh * d.kw), ki = j / d.kw % d.kh, kj = j % d.kw;
        const int64_t s = first + r / hw, oh = r % hw / d.wout, ow = r % d.wout;
        const int64_t h = oh * d.sh - d.ph + ki, w = ow * d.sw - d.pw + kj;
        const bool inside = h >= 0 && h < d.hin && w >= 0 && w < d.win;
        col[e] = to_16(inside ? x[((s * d.cin + c) * d.hin + h) * d.win + w] : 0.0f, half);
    }
}

// dz16[c][i hw + q] = dz[first + i][c][q], rounded: the chunk's dz with the
// samples side by side, so one product sums over all of them.
__global__ void conv_dz_rows_kernel(ConvDims d, const float *dz, int64_t first, int64_t cols, size_t total,
                                    uint16_t *dz16, bool half) {
    const int64_t hw = d.hout * d.wout;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        const int64_t c = (int64_t)(e / (size_t)cols), r = (int64_t)(e % (size_t)cols);
        dz16[e] = to_16(dz[((first + r / hw) * d.cout + c) * hw + r % hw], half);
    }
}

// dx[first + i][c][h][w] = the sum over ki, kj (in that order) of
// dcol[(c kh + ki) kw + kj][i hw + oh wout + ow] where x[..][h][w] was
// lowered to: h = oh sh - ph + ki, w = ow sw - pw + kj.
__global__ void conv_lower_adjoint_kernel(ConvDims d, const float *dcol, int64_t first, int64_t cols, size_t total,
                                          float *dx) {
    const int64_t hw = d.hout * d.wout, image = d.hin * d.win;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        const int64_t i = (int64_t)(e / (size_t)(d.cin * image)), c = (int64_t)(e / (size_t)image) % d.cin;
        const int64_t h = (int64_t)(e % (size_t)image) / d.win, w = (int64_t)(e % (size_t)d.win);
        float sum = 0.0f;
        for (int64_t ki = 0; ki < d.kh; ++ki) {
            const int64_t at_h = h + d.ph - ki;  // oh sh
            if (at_h < 0 || at_h % d.sh != 0 || at_h / d.sh >= d.hout) continue;
            for (int64_t kj = 0; kj < d.kw; ++kj) {
                const int64_t at_w = w + d.pw - kj;  // ow sw
                if (at_w < 0 || at_w % d.sw != 0 || at_w / d.sw >= d.wout) continue;
                sum += dcol[((c * d.kh + ki) * d.kw + kj) * cols + i * hw + at_h / d.sh * d.wout + at_w / d.sw];
            }
        }
        dx[(size_t)(first * d.cin * image) + e] = sum;
    }
}

void lower(cudaStream_t stream, const ConvDims &d, Precision p, const float *x, int64_t first, int64_t nb,
           uint16_t *col) {
    const int64_t cols = nb * positions(d);
    const size_t total = (size_t)(taps(d) * cols);
    SNN_LAUNCH(conv_lower_kernel, blocks_for(total), kThreads, stream, d, x, first, cols, total, col,
               p == Precision::f16);
    check_launch("conv_lower kernel");
}

// The float scratch of backward (a chunk's dcol), where the copies start.
size_t dcol_bytes(const ConvDims &d, int64_t n) {
    return aligned16((size_t)(std::min(chunk_of(d), n) * positions(d) * taps(d)) * sizeof(float));
}

}  // namespace

size_t conv_lowered_bytes(const ConvDims &d, int64_t max_batch, bool backward, Precision p) {
    const size_t cols = (size_t)(std::min(chunk_of(d), max_batch) * positions(d));
    return (backward ? dcol_bytes(d, max_batch) : 0) +
           low_bytes(p, {(size_t)(d.cout * taps(d)), (size_t)taps(d) * cols, backward ? (size_t)d.cout * cols : 0});
}

// Per chunk, for each of its samples i (one strided batched product):
// Y_i^T (hw x cout, ld hw) = col_i^T (hw x C kh kw: buffer col from column
// i hw, OP_N, ld cols) . W^T (C kh kw x cout: buffer w, OP_N).
void conv_lowered_forward(CudaStream &cs, const ConvDims &d, Precision p, int64_t n, const float *x,
                          const float *w, float *y, void *workspace) {
    LowScratch low(p, workspace, 0);
    const int64_t K = taps(d), hw = positions(d), chunk = chunk_of(d);
    const void *w16 = operand(cs, p, w, (size_t)(d.cout * K), low.take(d.cout * K));
    uint16_t *col = low.take(std::min(chunk, n) * hw * K);
    for (int64_t s0 = 0; s0 < n; s0 += chunk) {
        const int64_t nb = std::min(chunk, n - s0), cols = nb * hw;
        lower(cs.stream, d, p, x, s0, nb, col);
        gemm_batched_at(cs, p, CUBLAS_OP_N, CUBLAS_OP_N, hw, d.cout, K, 1.0f, col, cols, hw, w16, K, 0, 0.0f,
                        y + s0 * d.cout * hw, hw, d.cout * hw, nb, "cublasGemmStridedBatched (conv forward)");
    }
}

// Per chunk, dz16 [cout][cols] the chunk's dz side by side:
//   dW^T (C kh kw x cout) (+)= col (buffer col, OP_T, ld cols) . dz16^T (buffer dz16, OP_N, ld cols)
//   dcol^T (cols x C kh kw) = dz16^T (buffer dz16, OP_N) . W (buffer w, OP_T, ld C kh kw)
//   dx = the adjoint of the lowering of dcol
void conv_lowered_backward(CudaStream &cs, const ConvDims &d, Precision p, int64_t n, const float *x,
                           const float *w, const float *dz, float *dw, float *dx, void *workspace) {
    float *dcol = static_cast<float *>(workspace);
    LowScratch low(p, workspace, dcol_bytes(d, n));
    const int64_t K = taps(d), hw = positions(d), chunk = chunk_of(d);
    const void *w16 = operand(cs, p, w, (size_t)(d.cout * K), low.take(d.cout * K));
    uint16_t *col = low.take(std::min(chunk, n) * hw * K), *dz16 = low.take(std::min(chunk, n) * hw * d.cout);
    for (int64_t s0 = 0; s0 < n; s0 += chunk) {
        const int64_t nb = std::min(chunk, n - s0), cols = nb * hw;
        lower(cs.stream, d, p, x, s0, nb, col);
        const size_t values = (size_t)(d.cout * cols);
        SNN_LAUNCH(conv_dz_rows_kernel, blocks_for(values), kThreads, cs.stream, d, dz, s0, cols, values, dz16,
                   p == Precision::f16);
        check_launch("conv_dz_rows kernel");
        gemm_at(cs, p, CUBLAS_OP_T, CUBLAS_OP_N, K, d.cout, cols, 1.0f, col, cols, dz16, cols, s0 > 0 ? 1.0f : 0.0f,
                dw, K, "cublasGemm (conv weight gradient)");
        if (dx == nullptr) continue;
        gemm_at(cs, p, CUBLAS_OP_N, CUBLAS_OP_T, cols, K, d.cout, 1.0f, dz16, cols, w16, K, 0.0f, dcol, cols,
                "cublasGemm (conv input gradient)");
        const size_t total = (size_t)(nb * d.cin * d.hin * d.win);
        SNN_LAUNCH(conv_lower_adjoint_kernel, blocks_for(total), kThreads, cs.stream, d, dcol, s0, cols, total, dx);
        check_launch("conv_lower_adjoint kernel");
    }
}

}  // namespace cu
}  // namespace snn
