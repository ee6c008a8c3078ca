// Elementwise and small reduction kernels shared by the ops. Each
// launcher queues one kernel on `stream` and checks the launch.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "core/math.h"

namespace snn {
namespace cu {

// z = y[e] + b[c], y[e] = act(z) with c = (e / inner) % channels: dense
// layers have inner = 1 (y is [n][out]), convolutions inner = h*w (y is
// [n][c][h][w]). b may be null (no bias); z[e] receives z where z is not
// null (the activations of act_uses_input).
void bias_activation(cudaStream_t stream, float *y, float *z, const float *b, size_t total,
                     int64_t channels, int64_t inner, Act act);

// dy[e] *= act'(v[e]), v the output y, or the input z for the activations of
// act_uses_input (core/math.h): turns dL/dy into dL/dz in place (nothing
// for identity).
void activation_grad(cudaStream_t stream, float *dy, const float *v, size_t total, Act act);

// dst[i] += src[i] for i < n.
void add_floats(cudaStream_t stream, float *dst, const float *src, size_t n);

// db[c] = sum over i < outer, r < inner of dz[(i * channels + c) * inner + r],
// summed in a fixed order (bit-reproducible, no atomics). Large channels are
// split over several blocks, whose partial sums go to `scratch` (the
// stream's CudaStream::sums, kSumScratch doubles).
void channel_sums(cudaStream_t stream, double *scratch, float *db, const float *dz, int64_t outer,
                  int64_t channels, int64_t inner);

// x[i] *= factor for i < n.
void scale_floats(cudaStream_t stream, float *x, float factor, size_t n);

// dst[i] = value for i < n.
void fill_floats(cudaStream_t stream, float *dst, float value, size_t n);

// dst row i = src row idx[i] for i < n, rows of row_bytes bytes; idx is a
// device array.
void gather_rows(cudaStream_t stream, void *dst, const void *src, const int64_t *idx, size_t n,
                 size_t row_bytes);

// *flag = 1 if some x[i] is NaN or infinite (flag must be zeroed before).
void flag_nonfinite(cudaStream_t stream, const float *x, size_t n, int32_t *flag);

// cudaSuccess when this build holds code (SASS or PTX) the current device
// can run; the error of looking up a kernel otherwise.
cudaError_t probe_kernel_image();

}  // namespace cu
}  // namespace snn
