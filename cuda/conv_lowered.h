// conv's products at bf16 and fp16, lowered to matrix products (cuda/conv.cu
// calls them instead of cuDNN at a low precision). cuDNN's legacy API takes
// 16-bit x and w only with y, dx and dW of the same 16-bit type
// (PSEUDO_HALF / PSEUDO_BFLOAT16 configurations), which would round the
// outputs and the weight gradients; lowered, the products keep float32
// outputs and sums as every other op does, through low_precision.h, and
// they run in the emulated suite.
//
// A chunk of nb samples is lowered into col[C kh kw][nb hout wout] (16-bit),
// column r = i hw + q of sample first + i at output position q.
#pragma once

#include "cuda_backend.h"

namespace snn {
namespace cu {

// Workspace of a call with batches up to max_batch at p (not float32).
size_t conv_lowered_bytes(const ConvDims &d, int64_t max_batch, bool backward, Precision p);

// y[n][cout][hout][wout] = conv(x, W), before bias and activation.
void conv_lowered_forward(CudaStream &cs, const ConvDims &d, Precision p, int64_t n, const float *x,
                          const float *w, float *y, void *workspace);

// dW = correlation of x with dz, dx (when not null) = transposed convolution
// of dz with W.
void conv_lowered_backward(CudaStream &cs, const ConvDims &d, Precision p, int64_t n, const float *x,
                           const float *w, const float *dz, float *dw, float *dx, void *workspace);

}  // namespace cu
}  // namespace snn
