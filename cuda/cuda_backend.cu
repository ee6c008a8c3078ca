// CudaBackend: device selection, memory, streams, copies and gathers, and
// the table of its op kernels.
#include "cuda_backend.h"

#include <cstring>
#include <new>

#include "elementwise.h"
#include "core/op_list.h"

#ifndef SNN_CUDA_ARCHS
#define SNN_CUDA_ARCHS "(unknown)"
#endif

namespace snn {

// Each op's kernels, defined in its own file (cuda/<op>.cu). Weak, by
// design (unlike the CPU's, which are strong): an op without a CUDA file
// leaves its address null, so kernels() answers that the GPU lacks it. Hidden, so no reference reaches the dynamic symbol
// table.
#define SNN_CUDA_OP_DECLARE(name) \
    extern const OpKernels cuda_op_##name __attribute__((weak, visibility("hidden")));
SNN_OP_LIST(SNN_CUDA_OP_DECLARE)
#undef SNN_CUDA_OP_DECLARE

namespace cu {

CudaBackend::CudaBackend(int32_t device) : device_(device) {
    select();
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    cudaError_t image = probe_kernel_image();
    if (image != cudaSuccess) {
        cudaGetLastError();
        raise(SNN_ERR_UNSUPPORTED,
              strf("GPU %d (%s, compute capability %d.%d) cannot run this build of the CUDA "
                   "plugin, made for SM architectures %s: %s; rebuild snn with -Dgpu_archs=%d%d",
                   device, prop.name, prop.major, prop.minor, SNN_CUDA_ARCHS,
                   cudaGetErrorString(image), prop.major, prop.minor));
    }
    // cuBLAS recommends 32 MiB of workspace on Hopper and later, 4 MiB before.
    major_ = prop.major;
    blas_workspace_bytes_ = (prop.major >= 9 ? 32u : 4u) << 20;
    name_ = strf("cuda:%d (%s, sm_%d%d, cuDNN %zu)", device, prop.name, prop.major, prop.minor,
                 cudnnGetVersion());
}

void CudaBackend::select() const {
    check(cudaSetDevice(device_), "cudaSetDevice");
}

CudaStream &CudaBackend::use(Stream *s) const {
    if (s == nullptr) raise(SNN_ERR_INTERNAL, "CUDA backend called without a stream");
    CudaStream &cs = *static_cast<CudaStream *>(s);
    if (cs.device != device_)
        raise(SNN_ERR_INTERNAL,
              strf("a stream of GPU %d was used with the backend of GPU %d", cs.device, device_));
    select();
    return cs;
}

// ---- memory -------------------------------------------------------------------

void *CudaBackend::alloc(size_t bytes) {
    if (bytes == 0) return nullptr;
    select();
    void *p = nullptr;
    cudaError_t status = cudaMalloc(&p, bytes);
    if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        size_t free_bytes = 0, total_bytes = 0;
        if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) cudaGetLastError();
        raise(SNN_ERR_OUT_OF_MEMORY,
              strf("cudaMalloc: out of memory on GPU %d allocating %zu bytes (%zu of %zu free)",
                   device_, bytes, free_bytes, total_bytes));
    }
    check(status, "cudaMalloc");
    return p;
}

void CudaBackend::release(void *p) noexcept {
    if (p == nullptr) return;
    // cudaFree waits for the work queued on the device, so no kernel still
    // reads the memory when it is returned.
    cudaError_t status = cudaSetDevice(device_);
    if (status == cudaSuccess) status = cudaFree(p);
    if (status != cudaSuccess) {
        cudaGetLastError();
        try {
            log_warning(strf("cudaFree on GPU %d: %s", device_, cudaGetErrorString(status)));
        } catch (...) {
        }
    }
}

// ---- streams ------------------------------------------------------------------

// Frees whatever part of a stream exists; errors are ignored (used on
// teardown and when create_stream fails half way).
static void free_stream(CudaStream *cs) noexcept {
    if (cs->stream != nullptr) cudaStreamSynchronize(cs->stream);
    if (cs->dnn != nullptr) cudnnDestroy(cs->dnn);
    if (cs->blas != nullptr) cublasDestroy(cs->blas);
    if (cs->blas_workspace != nullptr) cudaFree(cs->blas_workspace);
    if (cs->staging != nullptr) cudaFreeHost(cs->staging);
    if (cs->flag_host != nullptr) cudaFreeHost(cs->flag_host);
    if (cs->indices != nullptr) cudaFree(cs->indices);
    if (cs->partials != nullptr) cudaFree(cs->partials);
    if (cs->sums != nullptr) cudaFree(cs->sums);
    if (cs->flag != nullptr) cudaFree(cs->flag);
    if (cs->staging_done != nullptr) cudaEventDestroy(cs->staging_done);
    if (cs->order != nullptr) cudaEventDestroy(cs->order);
    if (cs->marked != nullptr) cudaEventDestroy(cs->marked);
    if (cs->caller != nullptr) cudaEventDestroy(cs->caller);
    if (cs->stream != nullptr) cudaStreamDestroy(cs->stream);
    cudaGetLastError();
    delete cs;
}

Stream *CudaBackend::create_stream(size_t staging_bytes, bool allow_tf32) {
    select();
    CudaStream *cs = new (std::nothrow) CudaStream();
    if (cs == nullptr) raise(SNN_ERR_OUT_OF_MEMORY, "create_stream: out of host memory");
    cs->device = device_;
    cs->tf32 = allow_tf32;
    cs->staging_bytes = staging_bytes > kMinStagingBytes ? staging_bytes : kMinStagingBytes;
    try {
        // Non-blocking: the stream never waits for the legacy default stream,
        // which the host application may use for its own work.
        check(cudaStreamCreateWithFlags(&cs->stream, cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags");
        check(cudaEventCreateWithFlags(&cs->order, cudaEventDisableTiming),
              "cudaEventCreateWithFlags");
        check(cudaEventCreateWithFlags(&cs->staging_done, cudaEventDisableTiming),
              "cudaEventCreateWithFlags");
        check(cudaEventCreateWithFlags(&cs->marked, cudaEventDisableTiming),
              "cudaEventCreateWithFlags");
        check(cudaEventCreateWithFlags(&cs->caller, cudaEventDisableTiming),
              "cudaEventCreateWithFlags");

        check(cublasCreate(&cs->blas), "cublasCreate");
        // cublasSetStream resets the workspace to cuBLAS's own pool, so the
        // explicit workspace is set after it.
        check(cublasSetStream(cs->blas, cs->stream), "cublasSetStream");
        check(cudaMalloc(&cs->blas_workspace, blas_workspace_bytes_),
              "cudaMalloc (cuBLAS workspace)");
        check(cublasSetWorkspace(cs->blas, cs->blas_workspace, blas_workspace_bytes_),
              "cublasSetWorkspace");
        // Default math is plain fp32; TF32 only when the caller allowed it.
        check(cublasSetMathMode(cs->blas,
                                allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
              "cublasSetMathMode");

        check(cudnnCreate(&cs->dnn), "cudnnCreate");
        check(cudnnSetStream(cs->dnn, cs->stream), "cudnnSetStream");

        check(cudaHostAlloc(reinterpret_cast<void **>(&cs->staging), cs->staging_bytes,
                            cudaHostAllocDefault),
              "cudaHostAlloc (staging buffer)");
        check(cudaHostAlloc(reinterpret_cast<void **>(&cs->flag_host), sizeof(int32_t),
                            cudaHostAllocDefault),
              "cudaHostAlloc (finite flag)");
        check(cudaMalloc(reinterpret_cast<void **>(&cs->indices), kIndexChunk * sizeof(int64_t)),
              "cudaMalloc (gather indices)");
        check(cudaMalloc(reinterpret_cast<void **>(&cs->partials), kReduceBlocks * sizeof(float)),
              "cudaMalloc (reduction scratch)");
        check(cudaMalloc(reinterpret_cast<void **>(&cs->sums), kSumScratch * sizeof(double)),
              "cudaMalloc (partial sums)");
        check(cudaMalloc(reinterpret_cast<void **>(&cs->flag), sizeof(int32_t)),
              "cudaMalloc (finite flag)");
    } catch (...) {
        free_stream(cs);
        throw;
    }
    return cs;
}

void CudaBackend::destroy_stream(Stream *s) noexcept {
    if (s == nullptr) return;
    CudaStream *cs = static_cast<CudaStream *>(s);
    if (cudaSetDevice(cs->device) != cudaSuccess) cudaGetLastError();
    free_stream(cs);
}

void CudaBackend::wait(Stream *waiter, Stream *producer) {
    if (waiter == producer) return;
    CudaStream &p = use(producer);
    CudaStream &w = use(waiter);
    check(cudaEventRecord(p.order, p.stream), "cudaEventRecord");
    check(cudaStreamWaitEvent(w.stream, p.order, 0), "cudaStreamWaitEvent");
}

void CudaBackend::mark(Stream *s) {
    CudaStream &cs = use(s);
    check(cudaEventRecord(cs.marked, cs.stream), "cudaEventRecord (mark)");
}

// An event never recorded completes at once: before the first mark the
// waiter waits for nothing.
void CudaBackend::wait_mark(Stream *waiter, Stream *marked) {
    if (waiter == marked) return;
    CudaStream &m = use(marked);
    CudaStream &w = use(waiter);
    check(cudaStreamWaitEvent(w.stream, m.marked, 0), "cudaStreamWaitEvent (mark)");
}

void CudaBackend::synchronize(Stream *s) {
    CudaStream &cs = use(s);
    check(cudaStreamSynchronize(cs.stream), "cudaStreamSynchronize");
}

// ---- staging buffer -------------------------------------------------------------

unsigned char *CudaBackend::acquire_staging(CudaStream &cs) const {
    if (cs.staging_busy) {
        // The previous copy out of the buffer may still be in flight.
        check(cudaEventSynchronize(cs.staging_done), "cudaEventSynchronize (staging buffer)");
        cs.staging_busy = false;
    }
    return cs.staging;
}

void CudaBackend::release_staging(CudaStream &cs) const {
    check(cudaEventRecord(cs.staging_done, cs.stream), "cudaEventRecord (staging buffer)");
    cs.staging_busy = true;
}

// ---- copies -------------------------------------------------------------------

// The host bytes are copied into the pinned staging buffer, so the caller
// may reuse its buffer at once, and the DMA runs asynchronously. Data larger
// than the buffer goes in chunks, each waiting for the previous one.
void CudaBackend::upload(Stream *s, void *dst, const void *src_host, size_t bytes) {
    CudaStream &cs = use(s);
    const unsigned char *src = static_cast<const unsigned char *>(src_host);
    unsigned char *out = static_cast<unsigned char *>(dst);
    for (size_t done = 0; done < bytes;) {
        size_t chunk = bytes - done < cs.staging_bytes ? bytes - done : cs.staging_bytes;
        unsigned char *staging = acquire_staging(cs);
        std::memcpy(staging, src + done, chunk);
        check(cudaMemcpyAsync(out + done, staging, chunk, cudaMemcpyHostToDevice, cs.stream),
              "cudaMemcpyAsync (upload)");
        release_staging(cs);
        done += chunk;
    }
}

void CudaBackend::download(Stream *s, void *dst_host, const void *src, size_t bytes) {
    CudaStream &cs = use(s);
    if (bytes > 0)
        check(cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost, cs.stream),
              "cudaMemcpyAsync (download)");
    check(cudaStreamSynchronize(cs.stream), "cudaStreamSynchronize (download)");
}

// cudaMemcpyDefault lets unified addressing tell where `src` lives, so
// buffers of other CUDA libraries (CUDA.jl, CuPy, PyTorch) work as sources.
void CudaBackend::copy(Stream *s, void *dst, const void *src, size_t bytes) {
    CudaStream &cs = use(s);
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cs.stream), "cudaMemcpyAsync (copy)");
}

// The stream waits for the calling thread's default streams of this device
// (one event, recorded on each in turn: a wait takes the record current when
// it is queued), copies, and the host waits for the copy: the caller's
// kernels before the call wrote src, and whatever it does after may change
// or free it.
void CudaBackend::copy_from_caller(Stream *s, void *dst, const void *src, size_t bytes) {
    CudaStream &cs = use(s);
    if (bytes == 0) return;
    for (cudaStream_t caller : {cudaStreamLegacy, cudaStreamPerThread}) {
        check(cudaEventRecord(cs.caller, caller), "cudaEventRecord (the caller's default stream)");
        check(cudaStreamWaitEvent(cs.stream, cs.caller, 0), "cudaStreamWaitEvent (the caller's default stream)");
    }
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cs.stream),
          "cudaMemcpyAsync (copy from the caller)");
    check(cudaEventRecord(cs.caller, cs.stream), "cudaEventRecord (copy from the caller)");
    check(cudaEventSynchronize(cs.caller), "cudaEventSynchronize (copy from the caller)");
}

// Rows are gathered on the host straight into the pinned buffer (as many
// whole rows as fit), then each chunk goes up in one copy.
void CudaBackend::gather_upload(Stream *s, void *dst, const void *src_host, const int64_t *idx,
                                size_t n, size_t row_bytes) {
    CudaStream &cs = use(s);
    if (n == 0 || row_bytes == 0) return;
    const unsigned char *src = static_cast<const unsigned char *>(src_host);
    unsigned char *out = static_cast<unsigned char *>(dst);
    size_t rows_per_chunk = cs.staging_bytes / row_bytes;
    if (rows_per_chunk == 0) {
        // A row larger than the staging buffer: upload row by row.
        for (size_t i = 0; i < n; ++i)
            upload(s, out + i * row_bytes, src + static_cast<size_t>(idx[i]) * row_bytes,
                   row_bytes);
        return;
    }
    for (size_t first = 0; first < n; first += rows_per_chunk) {
        size_t rows = n - first < rows_per_chunk ? n - first : rows_per_chunk;
        unsigned char *staging = acquire_staging(cs);
        for (size_t r = 0; r < rows; ++r)
            std::memcpy(staging + r * row_bytes,
                        src + static_cast<size_t>(idx[first + r]) * row_bytes, row_bytes);
        check(cudaMemcpyAsync(out + first * row_bytes, staging, rows * row_bytes,
                              cudaMemcpyHostToDevice, cs.stream),
              "cudaMemcpyAsync (gather upload)");
        release_staging(cs);
    }
}

// Indices travel host -> staging -> the stream's device index buffer, in
// chunks of kIndexChunk; a kernel then copies the rows on the device. The
// next chunk's index copy is queued after the previous kernel, so the index
// buffer is never overwritten while read.
void CudaBackend::gather_device(Stream *s, void *dst, const void *src, const int64_t *idx_host,
                                size_t n, size_t row_bytes) {
    CudaStream &cs = use(s);
    unsigned char *out = static_cast<unsigned char *>(dst);
    for (size_t first = 0; first < n; first += kIndexChunk) {
        size_t count = n - first < kIndexChunk ? n - first : kIndexChunk;
        unsigned char *staging = acquire_staging(cs);
        std::memcpy(staging, idx_host + first, count * sizeof(int64_t));
        check(cudaMemcpyAsync(cs.indices, staging, count * sizeof(int64_t), cudaMemcpyHostToDevice,
                              cs.stream),
              "cudaMemcpyAsync (gather indices)");
        release_staging(cs);
        gather_rows(cs.stream, out + first * row_bytes, src, cs.indices, count, row_bytes);
    }
}

// cudaMemcpyDefault as in copy().
void CudaBackend::copy2d(Stream *s, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                         size_t row_bytes, size_t rows) {
    CudaStream &cs = use(s);
    if (row_bytes == 0 || rows == 0) return;
    check(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, cudaMemcpyDefault,
                            cs.stream),
          "cudaMemcpy2DAsync (copy2d)");
}

void CudaBackend::add(Stream *s, float *dst, const float *src, size_t n) {
    CudaStream &cs = use(s);
    add_floats(cs.stream, dst, src, n);
}

void CudaBackend::scale(Stream *s, float *x, float factor, size_t n) {
    CudaStream &cs = use(s);
    scale_floats(cs.stream, x, factor, n);
}

// Tensor-core bf16 needs compute capability 8.0 (Ampere); fp16 runs on
// every device this build has code for.
PrecisionSupport CudaBackend::precision_support(Precision p, const char **why) const {
    if (p == Precision::bf16 && major_ < 8) {
        if (why) *why = "bf16 needs a GPU of compute capability 8.0 or newer";
        return PrecisionSupport::none;
    }
    if (why) *why = nullptr;
    return PrecisionSupport::native;
}

void CudaBackend::fill(Stream *s, float *dst, float value, size_t n) {
    CudaStream &cs = use(s);
    fill_floats(cs.stream, dst, value, n);
}

// The one other place besides download and synchronize that waits for the
// device: the flag must come back to answer.
bool CudaBackend::all_finite(Stream *s, const float *x, size_t n) {
    CudaStream &cs = use(s);
    check(cudaMemsetAsync(cs.flag, 0, sizeof(int32_t), cs.stream), "cudaMemsetAsync (finite flag)");
    flag_nonfinite(cs.stream, x, n, cs.flag);
    check(
        cudaMemcpyAsync(cs.flag_host, cs.flag, sizeof(int32_t), cudaMemcpyDeviceToHost, cs.stream),
        "cudaMemcpyAsync (finite flag)");
    check(cudaStreamSynchronize(cs.stream), "cudaStreamSynchronize (all_finite)");
    return *cs.flag_host == 0;
}

// ---- ops ----------------------------------------------------------------------

const OpKernels *CudaBackend::kernels(OpKind kind) const {
    switch (kind) {
#define SNN_CUDA_OP_CASE(name) \
    case OpKind::name: return &cuda_op_##name;
        SNN_OP_LIST(SNN_CUDA_OP_CASE)
#undef SNN_CUDA_OP_CASE
    }
    return nullptr;
}

}  // namespace cu
}  // namespace snn
