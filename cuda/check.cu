#include "check.h"

#include <cstdarg>
#include <cstdio>

namespace snn {
namespace cu {
namespace {
RaiseFn g_raise = nullptr;
LogFn g_log = nullptr;
}  // namespace

void set_host(RaiseFn raise, LogFn log) {
    g_raise = raise;
    g_log = log;
}

std::string strf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list copy;
    va_copy(copy, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    std::string out;
    if (n > 0) {
        out.resize(static_cast<size_t>(n) + 1);
        std::vsnprintf(&out[0], out.size(), fmt, ap);
        out.resize(static_cast<size_t>(n));
    }
    va_end(ap);
    return out;
}

void raise(snn_status status, const std::string &message) {
    // set_host ran in snn_cuda_plugin_init, before libsnn could reach any
    // other plugin code; g_raise throws libsnn's snn::Error.
    g_raise(status, message.c_str());
    __builtin_unreachable();
}

void log_warning(const std::string &message) {
    if (g_log != nullptr) g_log(SNN_LOG_WARNING, message.c_str());
}

void check(cudaError_t status, const char *call) {
    if (status == cudaSuccess) return;
    // Clear the (non-sticky) error so the next launch check does not report it again.
    cudaGetLastError();
    raise(status == cudaErrorMemoryAllocation ? SNN_ERR_OUT_OF_MEMORY : SNN_ERR_CUDA,
          strf("%s: %s (%s)", call, cudaGetErrorString(status), cudaGetErrorName(status)));
}

void check(cublasStatus_t status, const char *call) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    raise(status == CUBLAS_STATUS_ALLOC_FAILED ? SNN_ERR_OUT_OF_MEMORY : SNN_ERR_CUDA,
          strf("%s: %s (%s)", call, cublasGetStatusString(status), cublasGetStatusName(status)));
}

void check(cudnnStatus_t status, const char *call) {
    if (status == CUDNN_STATUS_SUCCESS) return;
    bool oom = status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
               status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
    // cuDNN 9 keeps a more specific text of its last failure on this thread.
    char detail[256] = {0};
    cudnnGetLastErrorString(detail, sizeof detail);
    raise(oom ? SNN_ERR_OUT_OF_MEMORY : SNN_ERR_CUDA,
          detail[0] ? strf("%s: %s (%s)", call, cudnnGetErrorString(status), detail)
                    : strf("%s: %s", call, cudnnGetErrorString(status)));
}

void check_launch(const char *kernel) {
    check(cudaGetLastError(), kernel);
}

unsigned int blocks_for(size_t count) {
    size_t blocks = (count + kThreads - 1) / kThreads;
    if (blocks == 0) blocks = 1;
    return static_cast<unsigned int>(blocks < kGridStrideBlocks ? blocks : kGridStrideBlocks);
}

}  // namespace cu
}  // namespace snn
