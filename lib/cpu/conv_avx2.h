// Direct convolution with stride 1 for processors with AVX2 and FMA (and
// no AVX-512), without lowering: the design of cpu/conv_avx512.h with
// vectors of 8 floats. An image is copied once into a zero-padded buffer
// whose rows all have one pitch; the output is computed in that buffer's
// flat coordinates q = oy*pitch + ox (a row's last pitch - wout columns are
// computed and dropped), where tap (i, j) of input channel c reads the
// buffer at c*plane + q + i*pitch + j: every tap is a contiguous run of the
// buffer, so tiles of 4 output channels x 24 values of q (or 6 x 16) are
// built in the 16 vector registers from broadcast weights and unaligned
// loads, and the valid columns are packed together (a permutation and a
// masked store) as they are stored in NCHW.
// The input gradient is the same product over the padded output gradient
// with the kernel turned around; the weight gradient, over the images of a
// chunk, is a product of the output gradient transposed (a vector of output
// channels per output) and broadcast inputs of the padded buffer, in tiles
// of 16 output channels x 6 taps held in registers.
// Results do not depend on the thread count: each output, input gradient
// and (per chunk of images) weight gradient is summed in one fixed order.
// Built for x86-64 with GCC or Clang outside Windows (where GCC keeps the
// stack 16-byte aligned, short of what spilled 32-byte vectors need);
// elsewhere conv_avx2_built() is false and the convolution's table never
// takes these kernels.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"

namespace snn {

// Whether this build has the kernels (the processor is the table's
// question: cpu_kernel_features().avx2_fma).
bool conv_avx2_built();

// Output channels of a block: a batch smaller than the threads splits each
// image's channels over them in ranges of this many.
constexpr int64_t kConvAvx2Rows = 4;

// Workspace floats one worker needs to run the forward pass over its images.
size_t conv_avx2_forward_floats(const ConvDims &d);

// The forward pass's table of which outputs each vector stores (it depends
// on the geometry alone): its floats, and the table written to `table`.
size_t conv_avx2_forward_lanes_floats(const ConvDims &d);
void conv_avx2_forward_lanes(const ConvDims &d, float *table);

// The images a backward chunk takes within a budget of floats (at least 1),
// and the workspace floats one worker needs for chunks of `chunk` images.
int64_t conv_avx2_backward_chunk(const ConvDims &d, int64_t budget_floats);
size_t conv_avx2_backward_floats(const ConvDims &d, int64_t chunk);

// Prepares a worker's workspace for conv_avx2_forward_image calls (once per
// pass).
void conv_avx2_forward_begin(const ConvDims &d, float *workspace);

// Output channels [co0, co1) of one image: y = act(w * x + b) in NCHW, z kept
// in pre when not null (then y = act(pre)). padded: the workspace already
// holds this image's padded copy (a previous call with the same image).
// lanes: conv_avx2_forward_lanes's table.
void conv_avx2_forward_image(const ConvDims &d, const float *x, const float *w, const float *b, float *y, float *pre,
                             int64_t co0, int64_t co1, bool padded, const float *lanes, float *workspace);

// For nb images from x, y (or pre), dy: dz = dy act'(y or pre) (written
// over dy); db += sums of dz; dw += the products of dz and the shifted
// inputs; dx = the transposed convolution of dz when dx is not null.
void conv_avx2_backward_images(const ConvDims &d, int64_t nb, const float *x, const float *w, const float *y,
                               const float *pre, float *dy, float *dw, float *db, float *dx, float *workspace);

}  // namespace snn
