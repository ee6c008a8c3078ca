// Dropout on the CPU (ops/dropout.cpp). Element i of the batch keeps the
// scale core/math.h's dropout_scale gives it (0, or 1/(1-p)), the same
// number on every backend; aux holds the scales for the backward pass.
#include "ops/op.h"

namespace snn {
namespace {

// Training: aux = scale(i) ; y = x aux. Inference: y = x.
void forward(const OpArgs &a) {
    const int64_t count = a.n * a.l->out.size();
    if (!a.training) {
        a.be->copy(a.s, a.y, a.x[0], size_t(count) * sizeof(float));
        return;
    }
    const float p = float(a.l->p), keep_scale = float(1.0 / (1.0 - a.l->p));
    for (int64_t i = 0; i < count; ++i) {
        a.aux[i] = dropout_scale(a.key, uint64_t(i), p, keep_scale);
        a.y[i] = a.x[0][i] * a.aux[i];
    }
}

// Training: dx = dy aux. Inference: dx = dy.
void backward(const OpArgs &a) {
    if (!a.dx[0]) return;
    const int64_t count = a.n * a.l->out.size();
    if (!a.training) {
        a.be->copy(a.s, a.dx[0], a.dy, size_t(count) * sizeof(float));
        return;
    }
    for (int64_t i = 0; i < count; ++i) a.dx[0][i] = a.dy[i] * a.aux[i];
}

}  // namespace

extern const OpKernels cpu_op_dropout{nullptr, nullptr, forward, backward};

}  // namespace snn
