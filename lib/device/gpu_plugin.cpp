// Finds and loads libsnn_cuda.so: $SNN_CUDA_PLUGIN if set, else the file
// next to libsnn.so itself. Loaded once, never unloaded.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "api/log.h"
#include "common/error.h"
#include "device/devices.h"
#include "engine/plugin.h"

namespace snn {
namespace {

[[noreturn]] void host_raise(snn_status status, const char *message) {
    throw Error(status, message ? message : "CUDA plugin error");
}

void host_log(int32_t level, const char *message) { log_message(level, message ? message : ""); }

const HostServices kHost = {kGpuPluginApiVersion, host_raise, host_log};

std::string directory_of_libsnn() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&host_log), &info) == 0 || info.dli_fname == nullptr)
        return "";
    std::string path = info.dli_fname;
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

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
    std::string path = (env && *env) ? std::string(env) : directory_of_libsnn() + "libsnn_cuda.so";
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char *why = dlerror();
        std::string reason = why ? why : "unknown reason";
        // A plugin that exists but cannot load its CUDA libraries means the
        // CUDA runtime is missing, not the plugin.
        bool exists = access(path.c_str(), F_OK) == 0;
        s.status = exists ? SNN_ERR_GPU_DRIVER : SNN_ERR_GPU_PLUGIN_NOT_FOUND;
        s.message = exists ? format("the CUDA plugin %s could not load the CUDA libraries: %s",
                                    path.c_str(), reason.c_str())
                           : format("the CUDA plugin was not found at %s (set SNN_CUDA_PLUGIN "
                                    "or build snn with CUDA): %s",
                                    path.c_str(), reason.c_str());
        return;
    }
    auto init = reinterpret_cast<snn_cuda_plugin_init_fn>(dlsym(handle, SNN_CUDA_PLUGIN_INIT_SYMBOL));
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

GpuRuntime &runtime() {
    PluginState &s = state();
    std::call_once(s.once, [&s] { load(s); });
    if (s.runtime == nullptr) throw Error(s.status, s.message);
    return *s.runtime;
}

}  // namespace

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
