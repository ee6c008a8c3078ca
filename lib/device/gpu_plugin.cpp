// Finds and loads the CUDA plugin (libsnn_cuda.so, snn_cuda.dll):
// $SNN_CUDA_PLUGIN if set, else the file next to snn's own module (the
// shared library, or the program's executable when it links snn
// statically). Loaded once, never unloaded.
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/log.h"
#include "common/error.h"
#include "device/devices.h"
#include "device/plugin.h"
#include "platform/dynamic_library.h"
#include "platform/files.h"

namespace snn {
namespace {

[[noreturn]] void host_raise(snn_status status, const char *message) {
    throw Error(status, message ? message : "CUDA plugin error");
}

void host_log(int32_t level, const char *message) { log_message(level, message ? message : ""); }

const HostServices kHost = {kGpuPluginApiVersion, host_raise, host_log};

struct PluginState {
    std::once_flag once;
    GpuRuntime *runtime = nullptr;
    snn_status status = SNN_OK;
    std::string message;
};

PluginState &state() {
    static PluginState *s = new PluginState();  // never destroyed (see plugin.h)
    return *s;
}

void load(PluginState &s) {
    const char *env = std::getenv("SNN_CUDA_PLUGIN");
    // Where the plugin is looked for when SNN_CUDA_PLUGIN is not set: snn's
    // own directory, or "" when it cannot be known (then the loader searches
    // its usual places).
    const std::string path = (env && *env) ? std::string(env)
                                           : platform::own_module_directory() +
                                                 platform::shared_library_file_name("snn_cuda");
    std::string reason;
    void *handle = platform::load_library(path, &reason);
    if (handle == nullptr) {
        // A plugin that exists but cannot load its CUDA libraries means the
        // CUDA runtime is missing, not the plugin.
        const bool exists = platform::exists(path);
        s.status = exists ? SNN_ERR_GPU_DRIVER : SNN_ERR_GPU_PLUGIN_NOT_FOUND;
        s.message = exists ? format("the CUDA plugin %s could not load the CUDA libraries: %s",
                                    path.c_str(), reason.c_str())
                           : format("the CUDA plugin was not found at %s (set SNN_CUDA_PLUGIN "
                                    "or build snn with CUDA): %s",
                                    path.c_str(), reason.c_str());
        return;
    }
    auto init =
        reinterpret_cast<snn_cuda_plugin_init_fn>(platform::library_symbol(handle, SNN_CUDA_PLUGIN_INIT_SYMBOL));
    if (init == nullptr) {
        s.status = SNN_ERR_GPU_PLUGIN_NOT_FOUND;
        s.message = format("%s is not an snn CUDA plugin (no %s symbol)", path.c_str(),
                           SNN_CUDA_PLUGIN_INIT_SYMBOL);
        return;
    }
    char msg[512] = {0};
    GpuRuntime *rt = nullptr;
    snn_status st = init(&kHost, &rt, msg, sizeof msg);
    if (st != SNN_OK || rt == nullptr) {
        s.status = st != SNN_OK ? st : SNN_ERR_INTERNAL;
        s.message = msg[0] ? msg : "the CUDA plugin failed to initialise";
        return;
    }
    s.runtime = rt;
}

// The runtime once loaded, for DeviceScope (null until then).
std::atomic<GpuRuntime *> g_loaded{nullptr};
thread_local DeviceScope *t_scope = nullptr;

}  // namespace

struct DeviceScopeAccess {
    // Saves the current device into the thread's scope if it has none yet.
    static void remember(GpuRuntime &rt) noexcept {
        DeviceScope *scope = t_scope;
        if (scope == nullptr || scope->saved_) return;
        scope->device_ = rt.current_device();
        scope->saved_ = true;
    }
};

namespace {

GpuRuntime &runtime() {
    PluginState &s = state();
    std::call_once(s.once, [&s] {
        load(s);
        g_loaded.store(s.runtime, std::memory_order_release);
    });
    if (s.runtime == nullptr) throw Error(s.status, s.message);
    // A call that loaded the plugin saves the device now, before the
    // plugin's first device selection.
    DeviceScopeAccess::remember(*s.runtime);
    return *s.runtime;
}

}  // namespace

DeviceScope::DeviceScope() noexcept {
    if (t_scope != nullptr) return;
    t_scope = this;
    outer_ = true;
    if (GpuRuntime *rt = g_loaded.load(std::memory_order_acquire)) DeviceScopeAccess::remember(*rt);
}

DeviceScope::~DeviceScope() {
    if (!outer_) return;
    t_scope = nullptr;
    GpuRuntime *rt = g_loaded.load(std::memory_order_acquire);
    if (saved_ && rt != nullptr) rt->restore_device(device_);
}

int32_t gpu_count() noexcept {
    try {
        return runtime().device_count();
    } catch (...) {
        return 0;
    }
}

Backend &backend_for(int32_t device) {
    if (device == SNN_DEVICE_CPU) return cpu_backend();
    if (device < 0) fail(SNN_ERR_GPU_INDEX, "device %d is neither SNN_DEVICE_CPU (-1) nor a GPU index", device);
    GpuRuntime &rt = runtime();
    int32_t count = rt.device_count();
    if (device >= count)
        fail(SNN_ERR_GPU_INDEX, "GPU %d requested but only %d visible (CUDA_VISIBLE_DEVICES applies)",
             device, count);
    return *rt.backend(device);
}

}  // namespace snn
