// Convolution at bf16 on the CPU (cpu/conv_bf16.cpp): conv.cpp's kernels
// hand a pass over to these when its precision is bf16; the plan is held in
// conv.cpp's.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ops/op.h"

namespace snn {

void *conv_bf16_plan(const Layer &l, int64_t max_batch, bool backward, size_t *workspace_bytes);
void conv_bf16_release(void *plan) noexcept;
void conv_bf16_forward(const OpArgs &a, const void *plan);
void conv_bf16_backward(const OpArgs &a, const void *plan);

}  // namespace snn
