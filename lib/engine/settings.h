// The engine's process-wide settings (snn.h: snn_set_num_threads,
// snn_set_check_finite, snn_set_allow_tf32), the only mutable globals
// besides the log callback (common/log.cpp).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace snn {

// The finite check: with it on, host buffers of inputs, targets and
// gradients are scanned (check_finite_host) and backprop and optimiser
// steps refuse NaN or Inf.
void set_check_finite(bool on);
bool check_finite_enabled();
// With the finite check on, every x[i] of a host buffer is finite:
// SNN_ERR_NOT_FINITE "<what>[i] is nan" otherwise. With it off, nothing is
// read.
void check_finite_host(const float *x, size_t count, const char *what);

// TF32 tensor-core products for caches made from now on.
void set_allow_tf32(bool on);
bool allow_tf32_enabled();

// The CPU thread bound: SNN_NUM_THREADS or the hardware's count, applied
// once before the first use of OpenBLAS, unless set_threads came first.
void ensure_threads_configured();
void set_threads(int32_t n);
int32_t threads();

}  // namespace snn
