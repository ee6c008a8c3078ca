// Direct convolution with stride 1 for processors with AVX-512, without
// lowering. An image is copied once into a zero-padded buffer whose rows all
// have one pitch; the output is then computed in that buffer's flat
// coordinates q = oy*pitch + ox (a row's last pitch - wout columns are
// computed and dropped), where tap (i, j) of input channel c reads the
// buffer at c*plane + q + i*pitch + j: every tap is a contiguous run of the
// buffer, so tiles of up to 8 output channels x 64 values of q are built in
// registers from broadcast weights and unaligned loads, and the valid
// columns are packed together as they are stored (NCHW, as always).
// The input gradient is the same product over the padded output gradient
// with the kernel turned around; the weight gradient sums products of the
// padded output gradient and shifted runs of the padded input, over the
// images of a chunk, in registers.
// Results do not depend on the thread count: each output, input gradient
// and (per chunk of images) weight gradient is summed in one fixed order.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"

namespace snn {

// Output channels of a product tile: a batch smaller than the threads splits
// each image's channels over them in ranges of this many.
constexpr int64_t kConv512Rows = 8;

// Stride 1 and padding smaller than the kernel on both axes: the shapes
// these kernels take (the processor and the kernel choice are the rest of
// their row in the convolution's table, cpu/conv_paths.h).
bool conv512_eligible(const ConvDims &d);

// Workspace floats one worker needs to run the forward pass over its images.
size_t conv512_forward_floats(const ConvDims &d);

// The forward pass's table of which outputs each vector stores (it depends
// on the geometry alone): its floats, and the table written to `table`.
size_t conv512_forward_lanes_floats(const ConvDims &d);
void conv512_forward_lanes(const ConvDims &d, float *table);

// The images a backward chunk takes within a budget of floats (at least 1),
// and the workspace floats one worker needs for chunks of `chunk` images.
int64_t conv512_backward_chunk(const ConvDims &d, int64_t budget_floats);
size_t conv512_backward_floats(const ConvDims &d, int64_t chunk);

// Prepares a worker's workspace for conv512_forward_image calls (once per
// pass).
void conv512_forward_begin(const ConvDims &d, float *workspace);

// Output channels [co0, co1) of one image: y = act(w * x + b) in NCHW, z kept
// in pre when not null (then y = act(pre)). padded: the workspace already
// holds this image's padded copy (a previous call with the same image).
// lanes: conv512_forward_lanes's table.
void conv512_forward_image(const ConvDims &d, const float *x, const float *w, const float *b, float *y, float *pre,
                           int64_t co0, int64_t co1, bool padded, const float *lanes, float *workspace);

// For nb images from x, y (or pre), dy: dz = dy act'(y or pre) (written
// over dy); db += sums of dz; dw += the products of dz and the shifted
// inputs; dx = the transposed convolution of dz when dx is not null.
void conv512_backward_images(const ConvDims &d, int64_t nb, const float *x, const float *w, const float *y,
                             const float *pre, float *dy, float *dw, float *db, float *dx, float *workspace);

}  // namespace snn
