// The plugin's entry point and process-wide state. Compiled by the host C++
// compiler (it includes device/plugin.h, see check.h).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "cuda_backend.h"
#include "device/plugin.h"

namespace snn {
namespace cu {
namespace {

// "13.0" from 13000.
std::string cuda_version_text(int version) {
    return strf("%d.%d", version / 1000, (version % 1000) / 10);
}

// Counts devices once: CUDA's answer does not change during a process.
// Backends are made on first use and, like the runtime, never destroyed
// (CUDA handles are not released from static destructors).
class CudaRuntime final : public GpuRuntime {
public:
    int32_t device_count() override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!counted_) {
            count_devices();
            counted_ = true;
        }
        if (status_ != SNN_OK) raise(status_, message_);
        return count_;
    }

    Backend *backend(int32_t device) override {
        int32_t count = device_count();
        if (device < 0 || device >= count)
            raise(SNN_ERR_GPU_INDEX, strf("GPU %d requested but CUDA sees %d (indices 0..%d; "
                                          "CUDA_VISIBLE_DEVICES applies)",
                                          device, count, count - 1));
        std::lock_guard<std::mutex> lock(mutex_);
        if (backends_[device] == nullptr) {
            CudaBackend *b = new (std::nothrow) CudaBackend(device);
            if (b == nullptr)
                raise(SNN_ERR_OUT_OF_MEMORY, "out of host memory creating a GPU backend");
            backends_[device] = b;
        }
        return backends_[device];
    }

    int32_t current_device() noexcept override {
        int device = -1;
        if (cudaGetDevice(&device) != cudaSuccess) {
            cudaGetLastError();
            return -1;
        }
        return device;
    }

    void restore_device(int32_t device) noexcept override {
        int now = -1;
        if (device < 0 || (cudaGetDevice(&now) == cudaSuccess && now == device)) return;
        if (cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
    }

private:
    // cudaErrorNoDevice (or a count of 0) means CUDA works but sees no GPU;
    // every other failure means the driver is missing, too old for the
    // runtime linked into the plugin, or broken.
    void count_devices() {
        int n = 0;
        cudaError_t status = cudaGetDeviceCount(&n);
        if (status == cudaSuccess && n > 0) {
            count_ = n;
            backends_.assign(static_cast<size_t>(n), nullptr);
            status_ = SNN_OK;
            return;
        }
        cudaGetLastError();
        const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
        if (status == cudaSuccess || status == cudaErrorNoDevice) {
            status_ = SNN_ERR_NO_GPU;
            message_ = strf(
                "the CUDA driver works but sees no GPU (cudaGetDeviceCount: %s; "
                "CUDA_VISIBLE_DEVICES is %s%s%s)",
                status == cudaSuccess ? "0 devices" : cudaGetErrorString(status),
                visible ? "\"" : "", visible ? visible : "unset", visible ? "\"" : "");
            return;
        }
        int driver = 0;
        if (cudaDriverGetVersion(&driver) != cudaSuccess) {
            cudaGetLastError();
            driver = 0;
        }
        status_ = SNN_ERR_GPU_DRIVER;
        if (status == cudaErrorInsufficientDriver)
            message_ =
                driver == 0
                    ? strf(
                          "no CUDA driver is installed (libcuda.so could not be loaded); the CUDA "
                          "plugin needs a driver for CUDA %s or newer (cudaGetDeviceCount: %s)",
                          cuda_version_text(CUDART_VERSION).c_str(), cudaGetErrorString(status))
                    : strf(
                          "the CUDA driver supports CUDA %s, older than the CUDA %s runtime of the "
                          "plugin: update the NVIDIA driver (cudaGetDeviceCount: %s)",
                          cuda_version_text(driver).c_str(),
                          cuda_version_text(CUDART_VERSION).c_str(), cudaGetErrorString(status));
        else
            message_ = strf("the CUDA driver could not be initialised (cudaGetDeviceCount: %s: %s)",
                            cudaGetErrorName(status), cudaGetErrorString(status));
    }

    std::mutex mutex_;
    bool counted_ = false;
    int32_t count_ = 0;
    snn_status status_ = SNN_OK;
    std::string message_;
    std::vector<CudaBackend *> backends_;
};

void write_message(char *msg, size_t capacity, const char *text) {
    if (msg != nullptr && capacity > 0) std::snprintf(msg, capacity, "%s", text);
}

}  // namespace
}  // namespace cu
}  // namespace snn

// The plugin's only exported symbol. It touches no CUDA API: the driver is
// first asked for in device_count(), so that its absence becomes a status.
extern "C" __attribute__((visibility("default"))) snn_status snn_cuda_plugin_init(
    const snn::HostServices *host, snn::GpuRuntime **out, char *msg, size_t msg_capacity) {
    using namespace snn::cu;
    try {
        if (host == nullptr || out == nullptr) {
            write_message(msg, msg_capacity, "snn_cuda_plugin_init: host services or out is NULL");
            return SNN_ERR_INTERNAL;
        }
        // api_version is the first member in every version of HostServices,
        // so it can be read before the rest is trusted.
        if (host->api_version != snn::kGpuPluginApiVersion) {
            write_message(msg, msg_capacity,
                          strf("the CUDA plugin implements plugin API version %d but this libsnn "
                               "uses version %d: build libsnn and libsnn_cuda.so from the same "
                               "sources",
                               snn::kGpuPluginApiVersion, host->api_version)
                              .c_str());
            return SNN_ERR_GPU_PLUGIN_NOT_FOUND;
        }
        if (host->raise == nullptr) {
            write_message(msg, msg_capacity, "snn_cuda_plugin_init: host services lack raise");
            return SNN_ERR_INTERNAL;
        }
        set_host(host->raise, host->log);
        // Made once and never destroyed (see plugin.h).
        static snn::GpuRuntime *runtime = new (std::nothrow) CudaRuntime();
        if (runtime == nullptr) {
            write_message(msg, msg_capacity, "out of host memory initialising the CUDA plugin");
            return SNN_ERR_OUT_OF_MEMORY;
        }
        *out = runtime;
        return SNN_OK;
    } catch (...) {
        write_message(msg, msg_capacity, "snn_cuda_plugin_init failed unexpectedly");
        return SNN_ERR_INTERNAL;
    }
}
