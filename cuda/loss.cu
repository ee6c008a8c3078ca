// Losses. The per-element math comes from
// core/math.h, the same functions the CPU backend calls.
//
// A loss is a sum written to one device float. To be reproducible bit for
// bit it is reduced in two fixed-order passes instead of with float atomics:
// each of B blocks (B a function of the size only) sums a fixed subset into
// CudaStream::partials[block], then one block adds the B partials. Both
// passes add with block_sum (block_reduce.h).
#include "block_reduce.h"
#include "cuda_backend.h"

namespace snn {
namespace cu {
namespace {

// Blocks of the first pass for `items` work items.
unsigned int reduce_blocks(size_t items) {
    size_t blocks = (items + kThreads - 1) / kThreads;
    if (blocks < 1) blocks = 1;
    return static_cast<unsigned int>(blocks < (size_t)kReduceBlocks ? blocks : kReduceBlocks);
}

// *loss = scale * (sum of partials[0..blocks)), blocks <= kThreads; the
// scale from device memory when scale_ptr is non-null.
__global__ void finish_sum_kernel(const float *partials, unsigned int blocks, float scale,
                                  const float *scale_ptr, float *loss) {
    __shared__ float buf[kThreads];
    const float total = block_sum(threadIdx.x < blocks ? partials[threadIdx.x] : 0.0f, buf);
    if (threadIdx.x == 0) *loss = total * (scale_ptr ? *scale_ptr : scale);
}

// The second pass: *loss = scale * (sum of the first pass's partials).
void finish_sum(CudaStream &cs, unsigned int blocks, float scale, float *loss,
                const float *scale_ptr = nullptr) {
    SNN_LAUNCH(finish_sum_kernel, 1, kThreads, cs.stream, cs.partials, blocks, scale, scale_ptr,
               loss);
    check_launch("loss sum kernel");
}

// *scale = 1 / (rows of a sequence output that count), 0 when none does
// (math.h label_row_counts); one block, a fixed order.
__global__ void count_rows_kernel(const int32_t *labels, const int32_t *lengths, int64_t n,
                                  int64_t steps, float *scale) {
    __shared__ float buf[kThreads];
    float count = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        count += label_row_counts(labels, lengths, steps, i) ? 1.0f : 0.0f;
    const float total = block_sum(count, buf);
    if (threadIdx.x == 0) *scale = total > 0.0f ? 1.0f / total : 0.0f;
}

// The CUDA stream of a loss's call, checked to belong to its backend.
CudaStream &stream_of(const LossArgs &a) { return static_cast<CudaBackend &>(*a.be).use(a.s); }

// An elementwise loss L (math.h's <name>_loss) over all count = n*k pairs:
//   loss = sum L::term(y, t, p) / count ;  dy = L::grad(y, t, p, 1 / count)
template <class L>
__global__ void elementwise_loss_kernel(const float *y, const float *t, float *dy, size_t count,
                                        float p, float inv_count, float *partials) {
    __shared__ float buf[kThreads];
    float acc = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        acc += L::term(y[i], t[i], p);
        dy[i] = L::grad(y[i], t[i], p, inv_count);
    }
    const float total = block_sum(acc, buf);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Cross-entropy of logits, one thread per row i (math.h's xent_row):
//   loss  = sum_i -log softmax(y_i)[label_i] / m
//   dy_ij = (softmax(y_i)_j - [j == label_i]) / m
// m = n, or for a sequence (scale_ptr non-null) the rows that count, 1 / m
// at *scale_ptr; the others get dy = 0.
__global__ void xent_kernel(const float *y, const int32_t *labels, float *dy, int64_t n, int64_t k,
                            float inv_batch, const float *scale_ptr, const int32_t *lengths,
                            int64_t steps, float *partials) {
    __shared__ float buf[kThreads];
    float acc = 0.0f;
    if (scale_ptr) inv_batch = *scale_ptr;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float *row = y + i * k;
        float *grad = dy + i * k;
        if (scale_ptr && !label_row_counts(labels, lengths, steps, i)) {
            for (int64_t j = 0; j < k; ++j) grad[j] = 0.0f;
            continue;
        }
        const int32_t label = labels[i];
        const XentRow r = xent_row(row, k);
        acc += xent_row_loss(r, row[label]);
        for (int64_t j = 0; j < k; ++j) grad[j] = xent_grad(r, row[j], j, label, inv_batch);
    }
    const float total = block_sum(acc, buf);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <class L>
void elementwise_loss(const LossArgs &a) {
    CudaStream &cs = stream_of(a);
    const size_t count = static_cast<size_t>(a.n * a.k);
    const unsigned int blocks = reduce_blocks(count);
    const float inv = 1.0f / (float)count;
    SNN_LAUNCH(elementwise_loss_kernel<L>, blocks, kThreads, cs.stream, a.y, a.targets, a.dy, count,
               a.param, inv, cs.partials);
    check_launch("elementwise loss kernel");
    finish_sum(cs, blocks, inv, a.loss);
}

void loss_mse(const LossArgs &a) { elementwise_loss<mse_loss>(a); }

void loss_logit_crossentropy(const LossArgs &a) {
    CudaStream &cs = stream_of(a);
    const unsigned int blocks = reduce_blocks(static_cast<size_t>(a.n));
    const float inv = 1.0f / (float)a.n;
    const float *scale = a.sequence ? a.scale : nullptr;
    if (a.sequence) {
        SNN_LAUNCH(count_rows_kernel, 1, kThreads, cs.stream, a.labels, a.lengths, a.n, a.steps,
                   a.scale);
        check_launch("count_rows kernel");
    }
    SNN_LAUNCH(xent_kernel, blocks, kThreads, cs.stream, a.y, a.labels, a.dy, a.n, a.k, inv, scale,
               a.lengths, a.steps, cs.partials);
    check_launch("xent_loss kernel");
    finish_sum(cs, blocks, inv, a.loss, scale);
}

void loss_huber(const LossArgs &a) { elementwise_loss<huber_loss>(a); }
void loss_smooth_l1(const LossArgs &a) { elementwise_loss<smooth_l1_loss>(a); }
void loss_bce_with_logits(const LossArgs &a) { elementwise_loss<bce_loss>(a); }

}  // namespace

LossKernel CudaBackend::loss_kernel(LossKind kind) const {
    static const LossKernel table[] = {
#define SNN_CUDA_LOSS_ENTRY(name, id) &loss_##name,
        SNN_LOSS_LIST(SNN_CUDA_LOSS_ENTRY)
#undef SNN_CUDA_LOSS_ENTRY
    };
    return table[static_cast<size_t>(kind)];
}

}  // namespace cu
}  // namespace snn
