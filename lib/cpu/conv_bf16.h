// Convolution at bf16 on the CPU (cpu/conv_bf16.cpp): the plan and the
// passes of the bf16 rows of the convolution's table (cpu/conv_paths.h),
// ConvPath::bf16_direct, bf16_shifted and bf16_im2col.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cpu/conv_paths.h"
#include "ops/op.h"

namespace snn {

// Stride 1, an odd kernel with "same" padding (k-1)/2, and a map wide
// enough that the shifted lowering's dropped columns cost little: the shape
// the shifted lowering takes.
bool conv_bf16_shifted_eligible(const ConvDims &d);

ConvPlanned *conv_bf16_plan(const Layer &l, const ConvProcessor &cpu, ConvPath path, int64_t max_batch, bool backward,
                           size_t *workspace_bytes);
void conv_bf16_release(ConvPlanned *plan) noexcept;
void conv_bf16_forward(const OpArgs &a, const ConvPlanned &plan);
void conv_bf16_backward(const OpArgs &a, const ConvPlanned &plan);

}  // namespace snn
