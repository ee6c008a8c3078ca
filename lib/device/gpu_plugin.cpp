// Finds and loads libsnn_cuda.so: $SNN_CUDA_PLUGIN if set, else the file
// next to libsnn.so itself or, in a program that links libsnn.a, next to the
// program's executable. Loaded once, never unloaded.
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "common/log.h"
#include "common/error.h"
#include "device/devices.h"
#include "device/plugin.h"

namespace snn {
namespace {

[[noreturn]] void host_raise(snn_status status, const char *message) {
    throw Error(status, message ? message : "CUDA plugin error");
}

void host_log(int32_t level, const char *message) { log_message(level, message ? message : ""); }

const HostServices kHost = {kGpuPluginApiVersion, host_raise, host_log};

// Where the plugin is looked for: an absolute directory ending in '/', or ""
// when it cannot be known (then dlopen searches its usual places).
char g_plugin_dir[PATH_MAX];

// Runs when libsnn is loaded, before the program can change directory:
// dladdr gives libsnn.so's path as it was opened, which may be relative (a
// relative LD_LIBRARY_PATH entry or dlopen path), and, for libsnn linked
// into the executable, argv[0], which may be a bare name found through PATH.
// The executable's own path comes from /proc/self/exe instead.
__attribute__((constructor)) void find_plugin_dir() {
    Dl_info info;
    link_map *map = nullptr;
    if (dladdr1(reinterpret_cast<void *>(&host_log), &info, reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP) == 0)
        return;
    char path[PATH_MAX] = "";
    if (map == nullptr || map->l_name == nullptr || map->l_name[0] == '\0') {  // the executable
        const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
        if (n <= 0) return;
        path[n] = '\0';
    } else if (info.dli_fname[0] == '/') {
        if (std::strlen(info.dli_fname) >= sizeof(path)) return;
        std::strcpy(path, info.dli_fname);
    } else {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof(cwd)) == nullptr) return;
        if (std::snprintf(path, sizeof(path), "%s/%s", cwd, info.dli_fname) >= int(sizeof(path))) return;
    }
    char *slash = std::strrchr(path, '/');
    slash[1] = '\0';
    std::memcpy(g_plugin_dir, path, size_t(slash + 2 - path));
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
    std::string path = (env && *env) ? std::string(env) : std::string(g_plugin_dir) + "libsnn_cuda.so";
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
