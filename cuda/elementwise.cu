#include "elementwise.h"

#include "block_reduce.h"

namespace snn {
namespace cu {

// ---- bias + activation ----------------------------------------------------

__global__ void bias_activation_kernel(float *y, float *z_out, const float *b, size_t total,
                                       int64_t channels, int64_t inner, Act act) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        float z = y[e];
        if (b != nullptr) z += b[(int64_t)(e / inner) % channels];
        if (z_out != nullptr) z_out[e] = z;
        y[e] = activate(act, z);
    }
}

void bias_activation(cudaStream_t stream, float *y, float *z, const float *b, size_t total,
                     int64_t channels, int64_t inner, Act act) {
    if (total == 0 || (b == nullptr && z == nullptr && act == Act::identity)) return;
    SNN_LAUNCH(bias_activation_kernel, blocks_for(total), kThreads, stream, y, z, b, total,
               channels, inner, act);
    check_launch("bias_activation kernel");
}

// ---- activation derivative --------------------------------------------------

__global__ void activation_grad_kernel(float *dy, const float *v, size_t total, Act act) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x)
        dy[e] *= activation_derivative(act, v[e]);
}

void activation_grad(cudaStream_t stream, float *dy, const float *v, size_t total, Act act) {
    if (total == 0 || act == Act::identity) return;
    SNN_LAUNCH(activation_grad_kernel, blocks_for(total), kThreads, stream, dy, v, total, act);
    check_launch("activation_grad kernel");
}

// ---- sum in place -----------------------------------------------------------

__global__ void add_kernel(float *dst, const float *src, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] += src[i];
}

void add_floats(cudaStream_t stream, float *dst, const float *src, size_t n) {
    if (n == 0) return;
    SNN_LAUNCH(add_kernel, blocks_for(n), kThreads, stream, dst, src, n);
    check_launch("add kernel");
}

__global__ void scale_kernel(float *x, float factor, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= factor;
}

void scale_floats(cudaStream_t stream, float *x, float factor, size_t n) {
    if (n == 0) return;
    SNN_LAUNCH(scale_kernel, blocks_for(n), kThreads, stream, x, factor, n);
    check_launch("scale kernel");
}

// ---- bias gradient: per-channel sums ------------------------------------------

// One block per channel. Thread t sums elements t, t + kThreads, ... of the
// channel in order; block_sum then adds the kThreads partial sums in its
// fixed tree. The order never depends on timing, so results are
// reproducible bit for bit.
__global__ void channel_sums_kernel(float *db, const float *dz, int64_t outer, int64_t channels,
                                    int64_t inner) {
    __shared__ float partial[kThreads];
    const int64_t c = blockIdx.x;
    const int64_t count = outer * inner;
    float acc = 0.0f;
    for (int64_t e = threadIdx.x; e < count; e += kThreads) {
        int64_t i = e / inner, r = e - i * inner;
        acc += dz[(i * channels + c) * inner + r];
    }
    const float total = block_sum(acc, partial);
    if (threadIdx.x == 0) db[c] = total;
}

void channel_sums(cudaStream_t stream, float *db, const float *dz, int64_t outer, int64_t channels,
                  int64_t inner) {
    if (channels <= 0) return;
    if (channels > 0x7fffffff)
        raise(SNN_ERR_UNSUPPORTED, strf("bias gradient of %lld channels", (long long)channels));
    SNN_LAUNCH(channel_sums_kernel, (unsigned int)channels, kThreads, stream, db, dz, outer,
               channels, inner);
    check_launch("channel_sums kernel");
}

// ---- fill -------------------------------------------------------------------

__global__ void fill_kernel(float *dst, float value, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = value;
}

void fill_floats(cudaStream_t stream, float *dst, float value, size_t n) {
    if (n == 0) return;
    SNN_LAUNCH(fill_kernel, blocks_for(n), kThreads, stream, dst, value, n);
    check_launch("fill kernel");
}

// ---- gather of rows -----------------------------------------------------------

// Copies in words of type W (16, 8, 4 or 1 bytes: the widest that divides
// the row size and both addresses).
template <typename W>
__global__ void gather_kernel(W *dst, const W *src, const int64_t *idx, size_t n,
                              size_t row_words) {
    const size_t total = n * row_words;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t i = e / row_words, w = e - i * row_words;
        dst[e] = src[(size_t)idx[i] * row_words + w];
    }
}

template <typename W>
static void launch_gather(cudaStream_t stream, void *dst, const void *src, const int64_t *idx,
                          size_t n, size_t row_bytes) {
    size_t row_words = row_bytes / sizeof(W);
    SNN_LAUNCH(gather_kernel<W>, blocks_for(n * row_words), kThreads, stream, static_cast<W *>(dst),
               static_cast<const W *>(src), idx, n, row_words);
    check_launch("gather kernel");
}

void gather_rows(cudaStream_t stream, void *dst, const void *src, const int64_t *idx, size_t n,
                 size_t row_bytes) {
    if (n == 0 || row_bytes == 0) return;
    uintptr_t bits =
        row_bytes | reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
    if (bits % 16 == 0)
        launch_gather<int4>(stream, dst, src, idx, n, row_bytes);
    else if (bits % 8 == 0)
        launch_gather<int2>(stream, dst, src, idx, n, row_bytes);
    else if (bits % 4 == 0)
        launch_gather<int32_t>(stream, dst, src, idx, n, row_bytes);
    else
        launch_gather<unsigned char>(stream, dst, src, idx, n, row_bytes);
}

// ---- finite check -----------------------------------------------------------------

// Every thread that sees a non-finite value stores the same 1, so the racing
// plain stores are harmless.
__global__ void nonfinite_kernel(const float *x, size_t n, int32_t *flag) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (!isfinite(x[i])) *flag = 1;
}

void flag_nonfinite(cudaStream_t stream, const float *x, size_t n, int32_t *flag) {
    if (n == 0) return;
    SNN_LAUNCH(nonfinite_kernel, blocks_for(n), kThreads, stream, x, n, flag);
    check_launch("all_finite kernel");
}

cudaError_t probe_kernel_image() {
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, fill_kernel);
}

}  // namespace cu
}  // namespace snn
