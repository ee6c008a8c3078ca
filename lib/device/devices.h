// Where backends come from: the CPU backend always exists; GPU backends come
// from the CUDA plugin, loaded with dlopen on first use.
#pragma once

#include <stdint.h>

#include "core/backend.h"

namespace snn {

Backend &cpu_backend();

// Number of usable GPUs; 0 when the plugin, driver or device is missing
// (never throws).
int32_t gpu_count() noexcept;

// The backend for SNN_DEVICE_CPU or a GPU index. For a GPU, throws
// SNN_ERR_GPU_PLUGIN_NOT_FOUND, SNN_ERR_GPU_DRIVER, SNN_ERR_NO_GPU or
// SNN_ERR_GPU_INDEX, each with a message saying what was tried.
Backend &backend_for(int32_t device);

// Keeps the calling thread's current CUDA device across a C entry point:
// the GPU backend makes its own device current on every call, and a host
// that drives another GPU from the same thread must find its own again.
// Only the thread's outermost scope acts; it saves the device when it
// begins (or when the CUDA plugin is loaded during the call, before the
// plugin selects any device) and makes it current again when it ends. A
// process that never loads the plugin pays one thread-local pointer.
class DeviceScope {
public:
    DeviceScope() noexcept;
    ~DeviceScope();
    DeviceScope(const DeviceScope &) = delete;
    DeviceScope &operator=(const DeviceScope &) = delete;

private:
    friend struct DeviceScopeAccess;
    bool outer_ = false;
    bool saved_ = false;
    int32_t device_ = -1;
};

}  // namespace snn
