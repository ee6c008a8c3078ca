// Learned positional embedding on the CPU (ops/posembed.cpp).
#include <string.h>

#include "ops/op.h"

namespace snn {
namespace {

// y[s][t][f] = x[s][t][f] + W[t][f]
void forward(const OpArgs &a) {
    const int64_t size = a.l->in.size();
    const float *w = a.params + a.l->weight_offset;
    for (int64_t s = 0; s < a.n; ++s)
        for (int64_t k = 0; k < size; ++k) a.y[s * size + k] = a.x[0][s * size + k] + w[k];
}

// dx = dy ; dW[t][f] = sum over samples of dy[s][t][f], in double, in sample order
void backward(const OpArgs &a) {
    const int64_t size = a.l->in.size();
    float *dw = a.grads + a.l->weight_offset;
    for (int64_t k = 0; k < size; ++k) {
        double sum = 0.0;
        for (int64_t s = 0; s < a.n; ++s) sum += a.dy[s * size + k];
        dw[k] = float(sum);
    }
    if (a.dx[0]) memcpy(a.dx[0], a.dy, size_t(a.n * size) * sizeof(float));
}

}  // namespace

extern const OpKernels cpu_op_posembed{nullptr, nullptr, forward, backward};

}  // namespace snn
