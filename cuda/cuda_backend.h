// The CUDA backend: one CudaBackend per device, one CudaStream per cache.
// Everything a forward, backward or optimiser step needs (handles, staging,
// scratch, descriptors, algorithms, workspaces) is made in create_stream or
// in an op's plan (cuda/<op>.cu); the per-call paths only queue work on the
// stream.
#pragma once

#include <string>

#include "check.h"
#include "core/backend.h"

namespace snn {
namespace cu {

// Upper bound of the blocks of a deterministic two-pass reduction (losses):
// the first pass writes one partial sum per block into CudaStream::partials,
// the second sums those partials in a fixed order.
constexpr int kReduceBlocks = 256;
// Doubles of a stream's scratch for per-slice partial sums (channel_sums,
// batchnorm): kernels that split a channel over several blocks put each
// block's sum there, and the next kernel on the stream adds them in a fixed
// order.
constexpr size_t kSumScratch = 65536;

// Indices gathered per chunk by gather_device (the device index buffer).
constexpr size_t kIndexChunk = 8192;

// Smallest pinned staging buffer, whatever the engine asks for, so that
// gather_device's index chunks always fit.
constexpr size_t kMinStagingBytes = size_t(1) << 20;
static_assert(kMinStagingBytes >= kIndexChunk * sizeof(int64_t),
              "index chunks must fit the staging buffer");

struct CudaStream final : Stream {
    int32_t device = 0;
    bool tf32 = false;
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;
    cudnnHandle_t dnn = nullptr;
    // Recorded on this stream by Backend::wait when it is the producer.
    cudaEvent_t order = nullptr;
    // Recorded by Backend::mark, waited on by Backend::wait_mark.
    cudaEvent_t marked = nullptr;
    // Recorded on the caller's default streams by copy_from_caller.
    cudaEvent_t caller = nullptr;
    // cuBLAS's workspace, given explicitly so cuBLAS never allocates later.
    void *blas_workspace = nullptr;
    // Pinned host buffer for uploads and host gathers. `staging_done` is
    // recorded after the last copy out of it; staging_busy says one is queued.
    unsigned char *staging = nullptr;
    size_t staging_bytes = 0;
    cudaEvent_t staging_done = nullptr;
    bool staging_busy = false;
    int64_t *indices = nullptr;    // device, kIndexChunk entries
    float *partials = nullptr;     // device, kReduceBlocks floats
    double *sums = nullptr;        // device, kSumScratch doubles
    int32_t *flag = nullptr;       // device, all_finite's answer
    int32_t *flag_host = nullptr;  // pinned, its copy on the host
};

class CudaBackend final : public Backend {
public:
    // Selects the device, reads its properties and checks that this build
    // has code for it.
    explicit CudaBackend(int32_t device);

    int32_t device() const override { return device_; }
    const char *name() const override { return name_.c_str(); }

    void *alloc(size_t bytes) override;
    void release(void *p) noexcept override;
    Stream *create_stream(size_t staging_bytes, bool allow_tf32) override;
    void destroy_stream(Stream *s) noexcept override;
    void wait(Stream *waiter, Stream *producer) override;
    void mark(Stream *s) override;
    void wait_mark(Stream *waiter, Stream *marked) override;
    void synchronize(Stream *s) override;
    void upload(Stream *s, void *dst, const void *src_host, size_t bytes) override;
    void download(Stream *s, void *dst_host, const void *src, size_t bytes) override;
    void copy(Stream *s, void *dst, const void *src, size_t bytes) override;
    void copy_from_caller(Stream *s, void *dst, const void *src, size_t bytes) override;
    void gather_upload(Stream *s, void *dst, const void *src_host, const int64_t *idx, size_t n,
                       size_t row_bytes) override;
    void gather_device(Stream *s, void *dst, const void *src, const int64_t *idx_host, size_t n,
                       size_t row_bytes) override;
    void fill(Stream *s, float *dst, float value, size_t n) override;
    bool all_finite(Stream *s, const float *x, size_t n) override;

    void add(Stream *s, float *dst, const float *src, size_t n) override;
    void scale(Stream *s, float *x, float factor, size_t n) override;
    PrecisionSupport precision_support(Precision p, const char **why) const override;
    void copy2d(Stream *s, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                size_t row_bytes, size_t rows) override;

    const OpKernels *kernels(OpKind kind) const override;

    LossKernel loss_kernel(LossKind kind) const override;

    void optimiser_step(Stream *s, OptKind kind, const OptStep &step, size_t count, float *params,
                        const float *grads, float *m, float *v, double *norm) override;

    // Makes this backend's device current for the calling thread (the host
    // may drive several GPUs from one thread).
    void select() const;
    // The CUDA stream behind `s`, checked to belong to this device; selects
    // the device too. Every op kernel starts with it (cuda/ops.h).
    CudaStream &use(Stream *s) const;

private:
    int32_t major_ = 0;  // compute capability
    // Blocks until the staging buffer's last copy finished, then returns it.
    unsigned char *acquire_staging(CudaStream &cs) const;
    // Marks the staging buffer busy until the copies queued so far finish.
    void release_staging(CudaStream &cs) const;

    int32_t device_;
    std::string name_;
    size_t blas_workspace_bytes_;
};

}  // namespace cu
}  // namespace snn
