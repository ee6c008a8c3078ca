// The seqpool op (ops/seqpool.cpp) over each sample's valid steps t <
// lengths[s] (device memory, or null for all T): one thread per (sample,
// feature) pools in step order, as the CPU (mean in double); the input
// gradient is one thread per element (ops/seq_math.h). The same bits as the
// CPU.
#include "ops.h"
#include "ops/seq_math.h"

namespace snn {
namespace cu {
namespace {

__global__ void seqpool_forward_kernel(const float *x, float *y, float *argmax, const int32_t *lengths,
                                       int64_t n, int64_t steps, int64_t features, SeqPool pool) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n * features;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t s = e / features, f = e % features;
        const int64_t len = valid_steps(lengths, s, steps);
        const float *xs = x + s * steps * features + f;
        if (pool == SeqPool::last) {
            y[e] = xs[(len - 1) * features];
        } else if (pool == SeqPool::mean) {
            double sum = 0.0;
            for (int64_t t = 0; t < len; ++t) sum += xs[t * features];
            y[e] = (float)(sum / (double)len);
        } else {
            int64_t m = 0;
            for (int64_t t = 1; t < len; ++t)
                if (seqpool_replaces(xs[t * features], xs[m * features])) m = t;
            y[e] = xs[m * features];
            argmax[e] = (float)m;
        }
    }
}

__global__ void seqpool_backward_kernel(const float *dy, const float *argmax, float *dx,
                                        const int32_t *lengths, size_t total, int64_t steps,
                                        int64_t features, SeqPool pool) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int64_t s = (int64_t)(e / (size_t)(steps * features));
        const int64_t t = (int64_t)(e / (size_t)features) % steps, f = (int64_t)(e % (size_t)features);
        const int64_t m = pool == SeqPool::max ? (int64_t)argmax[s * features + f] : 0;
        dx[e] = seqpool_dx(pool, t, valid_steps(lengths, s, steps), m, dy[s * features + f]);
    }
}

void seqpool_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const int64_t features = l.in.row_size();
    if (a.n <= 0) return;
    SNN_LAUNCH(seqpool_forward_kernel, blocks_for(static_cast<size_t>(a.n * features)), kThreads,
               cs.stream, a.x[0], a.y, aux_per_sample(a), a.lengths, a.n, l.in.steps(), features,
               l.pool);
    check_launch("seqpool_forward kernel");
}

void seqpool_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Layer &l = *a.l;
    const size_t total = static_cast<size_t>(a.n * l.in.size());
    if (a.dx[0] == nullptr || total == 0) return;
    SNN_LAUNCH(seqpool_backward_kernel, blocks_for(total), kThreads, cs.stream, a.dy,
               aux_per_sample(a), a.dx[0], a.lengths, total, l.in.steps(), l.in.row_size(), l.pool);
    check_launch("seqpool_backward kernel");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_seqpool{nullptr, nullptr, cu::seqpool_forward, cu::seqpool_backward};

}  // namespace snn
