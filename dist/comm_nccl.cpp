// libsnn_nccl: data-parallel training on several GPUs of one process with
// NCCL (the contract is in include/snn_dist_nccl.h). Gradients are averaged
// in place in each replica's device memory (snn_gradients_device); every
// CUDA and NCCL call is checked, and the all-reduce is polled against a
// deadline so that a stuck GPU becomes a status instead of a hang.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "guard.h"
#include "snn_dist_nccl.h"

// ncclAvg came with NCCL 2.10, ncclGetLastError with 2.13, ncclInProgress
// with 2.14.
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "libsnn_nccl needs NCCL 2.14 or newer"
#endif

struct snn_nccl_comm {
    std::vector<int32_t> devices;
    std::vector<ncclComm_t> comms;       // one per device, from ncclCommInitAll
    std::vector<cudaStream_t> streams;   // one per device, for the collectives
    std::vector<float *> gradients;      // scratch of the all-reduce: device pointers
    std::vector<float> host;             // scratch of the broadcast
    double timeout = 300.0;
    bool broken = false;
    std::string failure;

    snn_nccl_comm() = default;
    snn_nccl_comm(const snn_nccl_comm &) = delete;
    snn_nccl_comm &operator=(const snn_nccl_comm &) = delete;
    // Frees what was made, also after a partial creation. A broken
    // communicator's NCCL communicators were aborted already.
    ~snn_nccl_comm() {
        int current = 0;
        const bool restore = cudaGetDevice(&current) == cudaSuccess;
        for (size_t i = 0; i < streams.size(); ++i) {
            if (cudaSetDevice(devices[i]) == cudaSuccess) cudaStreamDestroy(streams[i]);
        }
        if (!broken)
            for (ncclComm_t c : comms) ncclCommDestroy(c);
        if (restore) cudaSetDevice(current);
    }
};

using namespace snn_dist;

namespace {


void check_cuda(cudaError_t status, const char *call) {
    if (status == cudaSuccess) return;
    cudaGetLastError();  // clears the error so that it does not leak into later calls
    fail(status == cudaErrorMemoryAllocation ? SNN_ERR_OUT_OF_MEMORY : SNN_ERR_CUDA, "%s: %s (%s)",
         call, cudaGetErrorString(status), cudaGetErrorName(status));
}

std::string nccl_text(ncclResult_t status, ncclComm_t comm) {
    std::string text = ncclGetErrorString(status);
    const char *detail = ncclGetLastError(comm);
    if (detail != nullptr && detail[0] != '\0') text += std::string(" (") + detail + ")";
    return text;
}

void check_nccl(ncclResult_t status, const char *call, ncclComm_t comm = nullptr) {
    if (status == ncclSuccess) return;
    fail(SNN_ERR_CUDA, "%s: %s", call, nccl_text(status, comm).c_str());
}


// Restores the calling thread's current CUDA device when a call ends.
class DeviceRestorer {
public:
    DeviceRestorer() { saved_ = cudaGetDevice(&device_) == cudaSuccess; }
    DeviceRestorer(const DeviceRestorer &) = delete;
    DeviceRestorer &operator=(const DeviceRestorer &) = delete;
    ~DeviceRestorer() {
        if (saved_) cudaSetDevice(device_);
    }

private:
    int device_ = 0;
    bool saved_ = false;
};

double now_seconds() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

std::string cuda_version_text(int version) {
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The number of GPUs CUDA sees, or the reason there is none, with the
// statuses of snn_gpu_status.
int visible_gpus() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess && count > 0) return count;
    cudaGetLastError();
    if (status == cudaSuccess || status == cudaErrorNoDevice)
        fail(SNN_ERR_NO_GPU, "the CUDA driver works but sees no GPU (cudaGetDeviceCount: %s)",
             cudaGetErrorString(status));
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    cudaGetLastError();
    if (status == cudaErrorInsufficientDriver && driver == 0)
        fail(SNN_ERR_GPU_DRIVER,
             "no CUDA driver is installed (libcuda.so could not be loaded); NCCL needs a driver "
             "for CUDA %s or newer (cudaGetDeviceCount: %s)",
             cuda_version_text(CUDART_VERSION).c_str(), cudaGetErrorString(status));
    if (status == cudaErrorInsufficientDriver)
        fail(SNN_ERR_GPU_DRIVER,
             "the CUDA driver supports CUDA %s, older than the CUDA %s runtime of libsnn_nccl: "
             "update the NVIDIA driver (cudaGetDeviceCount: %s)",
             cuda_version_text(driver).c_str(), cuda_version_text(CUDART_VERSION).c_str(),
             cudaGetErrorString(status));
    fail(SNN_ERR_GPU_DRIVER, "the CUDA driver could not be initialised (cudaGetDeviceCount: %s: %s)",
         cudaGetErrorName(status), cudaGetErrorString(status));
}

// Marks the communicator broken and aborts its NCCL communicators, whose
// pending work can then never complete.
void break_comm(snn_nccl_comm *c, const std::string &message) {
    if (c->broken) return;
    c->broken = true;
    c->failure = message;
    for (ncclComm_t comm : c->comms) ncclCommAbort(comm);
}

void check_usable(const snn_nccl_comm *c) {
    if (c->broken)
        fail(SNN_ERR_STATE, "the communicator failed earlier (%s); destroy it", c->failure.c_str());
}

void check_replica_count(const snn_nccl_comm *c, int32_t count) {
    if (count != int32_t(c->devices.size()))
        fail(SNN_ERR_INVALID_ARGUMENT, "count is %d but the communicator has %zu GPUs", count,
             c->devices.size());
}

// Every model is non-NULL, lives on its GPU and has the same size; returns
// the parameter count.
size_t check_models(const snn_nccl_comm *c, snn_model *const *models) {
    size_t first = 0;
    for (size_t i = 0; i < c->devices.size(); ++i) {
        if (models[i] == nullptr) fail(SNN_ERR_NULL_ARGUMENT, "models[%zu] is NULL", i);
        int32_t device = SNN_DEVICE_CPU;
        check_snn(snn_model_device(models[i], &device), "snn_model_device");
        if (device != c->devices[i])
            fail(SNN_ERR_DEVICE_MISMATCH, "models[%zu] is on %s, but replica %zu belongs to GPU %d", i,
                 device == SNN_DEVICE_CPU ? "the CPU" : ("GPU " + std::to_string(device)).c_str(), i,
                 c->devices[i]);
        size_t count = 0;
        check_snn(snn_parameter_count(models[i], &count), "snn_parameter_count");
        if (i == 0)
            first = count;
        else if (count != first)
            fail(SNN_ERR_COUNT, "models[%zu] has %zu parameters, models[0] %zu", i, count, first);
    }
    return first;
}

// Polls the communicator's streams until all have finished, CUDA or NCCL
// reports an error, or the timeout passes; the last two break it. Spins for
// the first millisecond, then sleeps 50 us between polls.
void wait_for_streams(snn_nccl_comm *c, const char *what) {
    const double start = now_seconds();
    const size_t n = c->devices.size();
    for (;;) {
        bool done = true;
        for (size_t i = 0; i < n; ++i) {
            ncclResult_t async = ncclSuccess;
            const ncclResult_t got = ncclCommGetAsyncError(c->comms[i], &async);
            if (got != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
                const ncclResult_t bad = got != ncclSuccess ? got : async;
                std::string message = std::string(what) + " failed on GPU " +
                                      std::to_string(c->devices[i]) + ": NCCL: " +
                                      nccl_text(bad, c->comms[i]) + "; the communicator is unusable";
                break_comm(c, message);
                fail(SNN_ERR_CUDA, "%s", message.c_str());
            }
            check_cuda(cudaSetDevice(c->devices[i]), "cudaSetDevice");
            const cudaError_t state = cudaStreamQuery(c->streams[i]);
            if (state == cudaErrorNotReady) {
                cudaGetLastError();
                done = false;
            } else if (state != cudaSuccess) {
                cudaGetLastError();
                std::string message = std::string(what) + " failed on GPU " +
                                      std::to_string(c->devices[i]) + ": cudaStreamQuery: " +
                                      cudaGetErrorString(state) + "; the communicator is unusable";
                break_comm(c, message);
                fail(SNN_ERR_CUDA, "%s", message.c_str());
            }
        }
        if (done) return;
        const double waited = now_seconds() - start;
        if (waited > c->timeout) {
            char text[256];
            std::snprintf(text, sizeof text,
                          "%s did not finish within %g s (a GPU stalled); the communicator is "
                          "unusable",
                          what, c->timeout);
            break_comm(c, text);
            fail(SNN_ERR_IO, "%s", text);
        }
        if (waited > 1e-3) {
            timespec pause = {0, 50000};
            nanosleep(&pause, nullptr);
        }
    }
}

}  // namespace

extern "C" {

SNN_NCCL_API const char *snn_nccl_last_error(void) { return last_error.c_str(); }

SNN_NCCL_API snn_status snn_nccl_comm_create(const int32_t *devices, int32_t count,
                                             snn_nccl_comm **out) {
    return guarded(__func__, [&] {
        need(devices, "devices");
        need(out, "out");
        if (count < 1) fail(SNN_ERR_INVALID_ARGUMENT, "count must be >= 1, got %d", count);
        for (int32_t i = 0; i < count; ++i) {
            if (devices[i] < 0)
                fail(SNN_ERR_GPU_INDEX, "devices[%d] is %d; GPU indices start at 0", i, devices[i]);
            for (int32_t j = 0; j < i; ++j)
                if (devices[j] == devices[i])
                    fail(SNN_ERR_INVALID_ARGUMENT, "GPU %d is listed twice (devices[%d] and [%d])",
                         devices[i], j, i);
        }
        int version = 0;
        check_nccl(ncclGetVersion(&version), "ncclGetVersion");
        if (version < NCCL_VERSION(2, 14, 0))
            fail(SNN_ERR_UNSUPPORTED, "the NCCL loaded is version %d; libsnn_nccl needs 2.14 or newer",
                 version);
        const int visible = visible_gpus();
        for (int32_t i = 0; i < count; ++i)
            if (devices[i] >= visible)
                fail(SNN_ERR_GPU_INDEX, "devices[%d] is GPU %d, but CUDA sees %d GPU(s)", i, devices[i],
                     visible);

        DeviceRestorer restore;
        auto c = std::make_unique<snn_nccl_comm>();
        c->devices.assign(devices, devices + count);
        c->gradients.resize(size_t(count));
        c->streams.reserve(size_t(count));
        std::vector<ncclComm_t> comms(size_t(count), nullptr);
        check_nccl(ncclCommInitAll(comms.data(), count, devices), "ncclCommInitAll");
        c->comms = comms;
        for (int32_t i = 0; i < count; ++i) {
            check_cuda(cudaSetDevice(devices[i]), "cudaSetDevice");
            cudaStream_t stream = nullptr;
            check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                       "cudaStreamCreateWithFlags");
            c->streams.push_back(stream);
        }
        *out = c.release();
    });
}

SNN_NCCL_API void snn_nccl_comm_destroy(snn_nccl_comm *comm) { delete comm; }

SNN_NCCL_API snn_status snn_nccl_comm_size(const snn_nccl_comm *comm, int32_t *count) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        need(count, "count");
        *count = int32_t(comm->devices.size());
    });
}

SNN_NCCL_API snn_status snn_nccl_set_timeout(snn_nccl_comm *comm, double seconds) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        if (!(seconds > 0.0)) fail(SNN_ERR_INVALID_ARGUMENT, "seconds must be > 0, got %g", seconds);
        comm->timeout = seconds;
    });
}

SNN_NCCL_API snn_status snn_nccl_broadcast_replicas(snn_nccl_comm *comm, snn_model *const *models,
                                                    int32_t count) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        need(models, "models");
        check_usable(comm);
        check_replica_count(comm, count);
        const size_t n = check_models(comm, models);
        comm->host.resize(n);
        check_snn(snn_get_parameters(models[0], comm->host.data(), n), "snn_get_parameters");
        for (int32_t i = 1; i < count; ++i)
            check_snn(snn_set_parameters(models[i], comm->host.data(), n), "snn_set_parameters");
    });
}

SNN_NCCL_API snn_status snn_nccl_allreduce_replica_gradients(snn_nccl_comm *comm,
                                                             snn_model *const *models,
                                                             snn_backward_cache *const *caches,
                                                             int32_t count) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        need(models, "models");
        need(caches, "caches");
        check_usable(comm);
        check_replica_count(comm, count);
        const size_t n = check_models(comm, models);
        DeviceRestorer restore;

        // Each replica's gradient, complete, on its own GPU.
        for (int32_t i = 0; i < count; ++i) {
            if (caches[i] == nullptr) fail(SNN_ERR_NULL_ARGUMENT, "caches[%d] is NULL", i);
            check_snn(snn_backward_cache_synchronize(caches[i]), "snn_backward_cache_synchronize");
            float *data = nullptr;
            size_t length = 0;
            check_snn(snn_gradients_device(caches[i], &data, &length), "snn_gradients_device");
            if (length != n)
                fail(SNN_ERR_COUNT, "caches[%d] holds %zu gradients, the models have %zu parameters", i,
                     length, n);
            cudaPointerAttributes where{};
            check_cuda(cudaPointerGetAttributes(&where, data), "cudaPointerGetAttributes");
            if (where.type != cudaMemoryTypeDevice || where.device != comm->devices[i])
                fail(SNN_ERR_DEVICE_MISMATCH, "caches[%d] is not on GPU %d (replica %d's GPU)", i,
                     comm->devices[i], i);
            comm->gradients[size_t(i)] = data;
        }

        // One all-reduce over all GPUs: a group, so that NCCL launches the
        // per-device parts together from this one thread.
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        ncclResult_t queued = ncclSuccess;
        int32_t failed_at = 0;
        for (int32_t i = 0; i < count && queued == ncclSuccess; ++i) {
            float *g = comm->gradients[size_t(i)];
            queued = ncclAllReduce(g, g, n, ncclFloat, ncclAvg, comm->comms[size_t(i)],
                                   comm->streams[size_t(i)]);
            failed_at = i;
        }
        const ncclResult_t ended = ncclGroupEnd();
        if (queued != ncclSuccess || ended != ncclSuccess) {
            const ncclResult_t bad = queued != ncclSuccess ? queued : ended;
            std::string message = std::string(queued != ncclSuccess ? "ncclAllReduce" : "ncclGroupEnd") +
                                  " failed (GPU " + std::to_string(comm->devices[size_t(failed_at)]) +
                                  "): " + nccl_text(bad, comm->comms[size_t(failed_at)]) +
                                  "; the communicator is unusable";
            break_comm(comm, message);
            fail(SNN_ERR_CUDA, "%s", message.c_str());
        }
        wait_for_streams(comm, "averaging the gradients");
    });
}

}  // extern "C"
