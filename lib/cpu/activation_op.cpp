// An activation as a layer of its own on the CPU (ops/activation.cpp):
// y = act(x) element-wise, through the loops of cpu/activation.h, split over
// the pool in ranges of 16 elements when large enough (each element as on
// one thread).
#include "cpu/activation.h"
#include "cpu/thread_pool.h"
#include "ops/op.h"

namespace snn {
namespace {

// y = act(x)
void forward(const OpArgs &a) {
    const float *x = a.x[0];
    float *y = a.y;
    parallel_ranges(a.n * a.l->out.size(), kElementGrain, 16, [&](int64_t first, int64_t last) {
        activate_copy(a.l->act, x + first, y + first, last - first);
    });
}

// dx = dy * act'(v), v = x for gelu and silu, y for the others
void backward(const OpArgs &a) {
    if (!a.dx[0]) return;
    const float *v = act_uses_input(a.l->act) ? a.x[0] : a.y;
    const float *dy = a.dy;
    float *dx = a.dx[0];
    parallel_ranges(a.n * a.l->out.size(), kElementGrain, 16, [&](int64_t first, int64_t last) {
        derivative_span(a.l->act, dy + first, v + first, dx + first, last - first);
    });
}

}  // namespace

extern const OpKernels cpu_op_activation{nullptr, nullptr, forward, backward};

}  // namespace snn
