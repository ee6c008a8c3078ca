// The embedding op (ops/embedding.cpp): y[r] = W[id[r]] for every step r of
// the batch, ids stored as floats.
//
// The weight gradient without atomics: thread (f, p) owns column f of the
// rows v = p, p + P, p + 2P, ... of dW (P partitions of the vocabulary). It
// zeroes them, then scans every id in step order and adds dy[r][f] where
// id[r] is one of its rows (never the pad row). Each dW value is summed by
// one thread in the CPU's order: the same bits, run after run.
#include <algorithm>

#include "ops.h"

namespace snn {
namespace cu {
namespace {

// Threads the weight gradient aims for (columns x partitions).
constexpr int64_t kGradThreads = int64_t(1) << 16;

__global__ void embedding_forward_kernel(const float *ids, const float *w, float *y, size_t total,
                                         int64_t features) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int64_t r = (int64_t)(e / features), f = (int64_t)(e % features);
        y[e] = w[(int64_t)ids[r] * features + f];
    }
}

__global__ void embedding_grad_kernel(const float *ids, const float *dy, float *dw, int64_t rows,
                                      int64_t vocab, int64_t features, int64_t parts, int64_t pad) {
    const size_t total = (size_t)(features * parts);
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < total;
         g += (size_t)gridDim.x * blockDim.x) {
        const int64_t f = (int64_t)(g % features), p = (int64_t)(g / features);
        for (int64_t v = p; v < vocab; v += parts) dw[v * features + f] = 0.0f;
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t id = (int64_t)ids[r];
            if (id % parts == p && id != pad) dw[id * features + f] += dy[r * features + f];
        }
    }
}

void embedding_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const size_t total = static_cast<size_t>(a.n * l.out.size());
    if (total == 0) return;
    SNN_LAUNCH(embedding_forward_kernel, blocks_for(total), kThreads, cs.stream, a.x[0],
               a.params + l.weight_offset, a.y, total, l.units);
    check_launch("embedding_forward kernel");
}

// Token ids have no gradient: only dW.
void embedding_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const int64_t features = l.units, vocab = int64_t(l.weight_count) / features;
    const int64_t parts = std::min(vocab, std::max<int64_t>(1, kGradThreads / features));
    SNN_LAUNCH(embedding_grad_kernel, blocks_for(static_cast<size_t>(features * parts)), kThreads,
               cs.stream, a.x[0], a.dy, a.grads + l.weight_offset, a.n * l.in.steps(), vocab, features,
               parts, l.pad_index);
    check_launch("embedding_grad kernel");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_embedding{nullptr, nullptr, cu::embedding_forward,
                                         cu::embedding_backward};

}  // namespace snn
