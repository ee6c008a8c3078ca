// Embedding on the CPU (ops/embedding.cpp): rows of W gathered by token id.
#include <string.h>

#include "ops/op.h"

namespace snn {
namespace {

// y[r] = W[id[r]] for every step r of the batch
void forward(const OpArgs &a) {
    const int64_t d = a.l->units, rows = a.n * a.l->in.steps();
    const float *w = a.params + a.l->weight_offset;
    for (int64_t r = 0; r < rows; ++r)
        memcpy(a.y + r * d, w + int64_t(a.x[0][r]) * d, size_t(d) * sizeof(float));
}

// dW[v] = sum of dy[r] over the steps r (in order) whose id is v; the pad
// row's stays 0. Token ids have no gradient.
void backward(const OpArgs &a) {
    const int64_t d = a.l->units, rows = a.n * a.l->in.steps();
    float *dw = a.grads + a.l->weight_offset;
    memset(dw, 0, a.l->weight_count * sizeof(float));
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t id = int64_t(a.x[0][r]);
        if (id == a.l->pad_index) continue;
        for (int64_t f = 0; f < d; ++f) dw[id * d + f] += a.dy[r * d + f];
    }
}

}  // namespace

extern const OpKernels cpu_op_embedding{nullptr, nullptr, forward, backward};

}  // namespace snn
