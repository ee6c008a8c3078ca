// Error handling of the CUDA plugin. Every CUDA, cuBLAS and cuDNN status is
// checked; a failure becomes snn::Error through HostServices::raise, which
// throws libsnn's own exception type (the plugin never throws its own).
//
// This header, like every .cu file, stays clear of device/plugin.h: the
// [[noreturn]] on its function-pointer member is a GCC extension that nvcc's
// front end rejects. plugin.cpp (compiled by the host compiler) hands the
// two host functions over with set_host.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "launch.h"
#include "snn.h"

namespace snn {
namespace cu {

// libsnn's HostServices::raise (throws, never returns) and ::log.
typedef void (*RaiseFn)(snn_status status, const char *message);
typedef void (*LogFn)(int32_t level, const char *message);

// Remembers libsnn's services; called once by snn_cuda_plugin_init.
void set_host(RaiseFn raise, LogFn log);

// printf-style formatting into a std::string.
std::string strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Throws snn::Error(status, message) from inside libsnn; never returns.
[[noreturn]] void raise(snn_status status, const std::string &message);

// A diagnostic for the host's log callback (used where nothing may throw).
void log_warning(const std::string &message);

// Each raises "<call>: <reason>" on failure: SNN_ERR_OUT_OF_MEMORY for an
// allocation failure, SNN_ERR_CUDA otherwise.
void check(cudaError_t status, const char *call);
void check(cublasStatus_t status, const char *call);
void check(cudnnStatus_t status, const char *call);

// After a kernel launch: raises if the launch failed.
void check_launch(const char *kernel);

// Threads per block of the elementwise kernels, and their grid: enough
// blocks to cover `count` items, at most kGridStrideBlocks (the kernels use
// grid-stride loops). A GPU gets enough blocks to fill it; the emulated
// runtime (cuda/emulation) a handful, so that the loops of its tests go
// round more than once.
constexpr int kThreads = 256;
#if defined(SNN_CUDA_EMULATED)
constexpr size_t kGridStrideBlocks = 3;
#else
constexpr size_t kGridStrideBlocks = 65536;
#endif
unsigned int blocks_for(size_t count);

}  // namespace cu
}  // namespace snn
