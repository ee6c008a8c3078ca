// Per-element math shared by every backend: activations and their
// derivatives, the formulas of normalisation and softmax, loss terms and
// optimiser update rules. The CPU backend calls these from plain loops; the
// CUDA backend from kernels (SNN_HD expands to __host__ __device__ under
// nvcc), so the CPU tests check the GPU's math.
//
// One header per topic, each included here in the order they build on:
//   math_numeric.h     SNN_HD, bf16/fp16 conversions, exp/tanh/sigmoid
//   math_activations.h the activation list, GELU, SiLU, their derivatives
//   math_random.h      dropout's counter-based random numbers
//   math_rows.h        normalisation, softmax and attention row formulas
//   math_recurrent.h   lstm and gru cells and their gradients
//   math_losses.h      loss terms and gradients, cross-entropy rows
//   math_optimisers.h  optimiser update rules, gradient-norm clipping
// A file that needs one topic may include its header alone.
#pragma once

#include "core/math_numeric.h"
#include "core/math_activations.h"
#include "core/math_random.h"
#include "core/math_rows.h"
#include "core/math_recurrent.h"
#include "core/math_losses.h"
#include "core/math_optimisers.h"
