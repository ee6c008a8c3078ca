// The contract between libsnn.so and the CUDA plugin libsnn_cuda.so.
//
// libsnn loads the plugin with dlopen the first time a GPU is asked for and
// calls its one exported function, snn_cuda_plugin_init, with the internal
// API version below. The plugin reports failures through HostServices::raise,
// which throws the engine's own snn::Error from inside libsnn, so exceptions
// thrown by the plugin are always libsnn's type.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"
#include "snn.h"

namespace snn {

// Bump whenever Backend, GpuRuntime or HostServices change.
constexpr int32_t kGpuPluginApiVersion = 4;

struct HostServices {
    int32_t api_version;
    // Throws snn::Error(status, message); never returns.
    void (*raise)(snn_status status, const char *message);
    // Routes a diagnostic to the host's log callback (SNN_LOG_* levels).
    void (*log)(int32_t level, const char *message);
};

// Process-wide GPU state of the plugin. Never destroyed: CUDA handles are not
// released from static destructors at exit (the driver may be gone).
class GpuRuntime {
public:
    virtual ~GpuRuntime() = default;
    // Number of visible devices (CUDA_VISIBLE_DEVICES honoured by CUDA).
    // Throws SNN_ERR_GPU_DRIVER (driver/runtime missing or too old) or
    // SNN_ERR_NO_GPU (no device), each with its own message.
    virtual int32_t device_count() = 0;
    // The backend of one device, created on first use and kept for the life
    // of the process. Throws SNN_ERR_GPU_INDEX for an index out of range.
    virtual Backend *backend(int32_t device) = 0;
    // The calling thread's current CUDA device, or -1 when CUDA cannot say.
    virtual int32_t current_device() noexcept = 0;
    // Makes `device` the calling thread's current device again when another
    // one is current (errors are ignored: it runs as a C call returns).
    virtual void restore_device(int32_t device) noexcept = 0;
};

}  // namespace snn

// Exported by libsnn_cuda.so. Returns SNN_OK and *out, or a status with a
// message written into msg (NUL-terminated, at most msg_capacity bytes).
extern "C" typedef snn_status (*snn_cuda_plugin_init_fn)(const snn::HostServices *host,
                                                         snn::GpuRuntime **out, char *msg,
                                                         size_t msg_capacity);
#define SNN_CUDA_PLUGIN_INIT_SYMBOL "snn_cuda_plugin_init"
