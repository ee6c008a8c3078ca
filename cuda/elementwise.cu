#include "elementwise.h"

#include "block_reduce.h"
#include "cuda_backend.h"

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

// Images (inner > 1): block b sums slice b % slices of channel b / slices:
// thread t adds the slice's values t, t + kThreads, ... in order (float),
// and block_sum adds the kThreads partial sums in its fixed tree. With one
// slice the block writes db[c]; otherwise its sum goes to
// partials[c * slices + s] and slice_totals_kernel adds them in slice
// order. The order never depends on timing, so results are reproducible
// bit for bit.
__global__ void channel_sums_kernel(float *out, const float *dz, int64_t outer, int64_t channels,
                                    int64_t inner, int64_t slices, int64_t length) {
    __shared__ float partial[kThreads];
    const int64_t c = blockIdx.x / slices, s = blockIdx.x - c * slices;
    const int64_t count = outer * inner;
    const int64_t first = s * length, end = first + length < count ? first + length : count;
    float acc = 0.0f;
    ChannelWalk w(first + threadIdx.x, channels, inner);
    for (int64_t e = first + threadIdx.x; e < end; e += kThreads, w.next()) acc += dz[w.at(c)];
    const float total = block_sum(acc, partial);
    if (threadIdx.x == 0) out[blockIdx.x] = total;
}

// Vectors (inner = 1, dz is [rows][channels]): thread t of column block cb
// sums channel cb * kThreads + t over the rows of slice s (coalesced
// reads), in row order; partials are [slices][channels] (or db itself for
// one slice).
__global__ void column_sums_kernel(float *out, const float *dz, int64_t rows, int64_t channels,
                                   int64_t length) {
    const int64_t column_blocks = (channels + kThreads - 1) / kThreads;
    const int64_t s = blockIdx.x / column_blocks, cb = blockIdx.x - s * column_blocks;
    const int64_t c = cb * kThreads + threadIdx.x;
    if (c >= channels) return;
    const int64_t first = s * length, end = first + length < rows ? first + length : rows;
    float acc = 0.0f;
    for (int64_t i = first; i < end; ++i) acc += dz[static_cast<size_t>(i * channels + c)];
    out[static_cast<size_t>(s * channels + c)] = acc;
}

// db[c] = sum over s of partials[c * channel_stride + s * slice_stride],
// in slice order.
__global__ void slice_totals_kernel(float *db, const float *partials, int64_t channels,
                                    int64_t slices, int64_t channel_stride, int64_t slice_stride) {
    for (int64_t c = blockIdx.x * (int64_t)kThreads + threadIdx.x; c < channels;
         c += (int64_t)gridDim.x * kThreads) {
        float total = 0.0f;
        for (int64_t s = 0; s < slices; ++s) total += partials[c * channel_stride + s * slice_stride];
        db[c] = total;
    }
}

void channel_sums(cudaStream_t stream, double *scratch, float *db, const float *dz, int64_t outer,
                  int64_t channels, int64_t inner) {
    if (channels <= 0) return;
    if (channels > 0x7fffffff)
        raise(SNN_ERR_UNSUPPORTED, strf("bias gradient of %lld channels", (long long)channels));
    // The partial sums are floats, two to a double of the scratch.
    float *partials = reinterpret_cast<float *>(scratch);
    const size_t room = 2 * kSumScratch;
    if (inner == 1) {
        const int64_t column_blocks = (channels + kThreads - 1) / kThreads;
        // Slices of at least 32 rows, enough of them for about 2 blocks per SM.
        Slicing sl = slicing_for(outer, channels, 32, room, 1);
        if (sl.slices * column_blocks > 0x7fffffff) sl = {1, outer};
        float *out = sl.slices == 1 ? db : partials;
        SNN_LAUNCH(column_sums_kernel, (unsigned int)(sl.slices * column_blocks), kThreads, stream, out, dz,
                   outer, channels, sl.length);
        check_launch("column_sums kernel");
        if (sl.slices == 1) return;
        SNN_LAUNCH(slice_totals_kernel, blocks_for(size_t(channels)), kThreads, stream, db, partials, channels,
                   sl.slices, (int64_t)1, channels);
        check_launch("slice_totals kernel");
        return;
    }
    Slicing sl = slicing_for(outer * inner, channels, 8192, room, 1);
    if (sl.slices * channels > 0x7fffffff) sl = {1, outer * inner};
    float *out = sl.slices == 1 ? db : partials;
    SNN_LAUNCH(channel_sums_kernel, (unsigned int)(channels * sl.slices), kThreads, stream, out, dz, outer,
               channels, inner, sl.slices, sl.length);
    check_launch("channel_sums kernel");
    if (sl.slices == 1) return;
    SNN_LAUNCH(slice_totals_kernel, blocks_for(size_t(channels)), kThreads, stream, db, partials, channels,
               sl.slices, sl.slices, (int64_t)1);
    check_launch("slice_totals kernel");
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
