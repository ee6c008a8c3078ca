// An activation as a layer of its own on the CPU (ops/activation.cpp):
// y = act(x) element-wise, through the loops of cpu/activation.h.
#include "cpu/activation.h"
#include "ops/op.h"

namespace snn {
namespace {

// y = act(x)
void forward(const OpArgs &a) {
    activate_copy(a.l->act, a.x[0], a.y, a.n * a.l->out.size());
}

// dx = dy * act'(v), v = x for gelu and silu, y for the others
void backward(const OpArgs &a) {
    if (!a.dx[0]) return;
    const float *v = act_uses_input(a.l->act) ? a.x[0] : a.y;
    derivative_span(a.l->act, a.dy, v, a.dx[0], a.n * a.l->out.size());
}

}  // namespace

extern const OpKernels cpu_op_activation{nullptr, nullptr, forward, backward};

}  // namespace snn
