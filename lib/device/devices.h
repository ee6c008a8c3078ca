// Where backends come from: the CPU backend always exists; GPU backends come
// from the CUDA plugin, loaded with dlopen on first use.
#pragma once

#include <stdint.h>

#include "engine/backend.h"

namespace snn {

Backend &cpu_backend();

// Number of usable GPUs; 0 when the plugin, driver or device is missing
// (never throws).
int32_t gpu_count() noexcept;

// The backend for SNN_DEVICE_CPU or a GPU index. For a GPU, throws
// SNN_ERR_GPU_PLUGIN_NOT_FOUND, SNN_ERR_GPU_DRIVER, SNN_ERR_NO_GPU or
// SNN_ERR_GPU_INDEX, each with a message saying what was tried.
Backend &backend_for(int32_t device);

}  // namespace snn
