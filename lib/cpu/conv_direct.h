// Direct convolution for few taps (cin*kh*kw small, stride 1), the first
// layer of most image networks: lowering such a layer to a product with an
// inner dimension of 9 or 25 leaves OpenBLAS packing and zeroing more than it
// multiplies. Here each image is copied once into a zero-padded buffer, and
// the outputs are built 16 columns at a time in registers, for several output
// channels at once. conv.cpp's im2col path stays the reference (tested against
// this one; SNN_CPU_KERNELS=reference selects it).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"

namespace snn {

// Columns built per step (one AVX-512 or two AVX2 registers per channel).
constexpr int64_t kDirectWidth = 16;

struct DirectLayout {
    int64_t hp, wp;  // padded input rows and row pitch: hin + 2ph, round16(wout) + kw - 1 (at least win + 2pw)
    int64_t wq;      // row pitch of a padded gradient map: round16(wout)
};

// Stride 1 and at most kDirectMaxTaps taps per output channel.
constexpr int64_t kDirectMaxTaps = 32;
bool conv_direct_eligible(const ConvDims &d);
DirectLayout conv_direct_layout(const ConvDims &d);

// Workspace floats one worker needs for one image.
size_t conv_direct_forward_floats(const ConvDims &d);
size_t conv_direct_backward_floats(const ConvDims &d);

// z[co][p] = b[co] + sum over taps of w x, for one image in NCHW; z is y (the
// activation is then applied in place) or the pre-activation buffer, from
// which y = act(z) is written.
void conv_direct_forward_image(const ConvDims &d, const float *x, const float *w, const float *b, float *y,
                               float *pre, float *workspace);

// For one image: dz = dy act'(y or pre); db += sums of dz; dw += dz (x)
// shifted; dx = the transposed convolution of dz (when dx is not null).
void conv_direct_backward_image(const ConvDims &d, const float *x, const float *w, const float *y,
                                const float *pre, const float *dy, float *dw, float *db, float *dx,
                                float *workspace);

}  // namespace snn
