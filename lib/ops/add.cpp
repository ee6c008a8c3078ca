// add ID: y = x + (output of the layer named ID), element-wise (a residual
// connection); x is the previous output, or with from= the named one. The gradient reaches both unchanged. Keeps nothing; its
// kernels are Backend primitives, so every backend runs it.
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &names) {
    if (st.size() != 2) spec_error(st[0], "add takes the name of an earlier layer: add ID", "");
    l.inputs.push_back(resolve_name(names, st[1]));
    l.bias = false;
}

void infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    const Layer &other = layers[size_t(l.inputs[1])];
    if (!(other.out == l.in))
        shape_error(layers, i,
                    format("the shapes differ: %s (%s) and %s (%s)", shape_text(l.in).c_str(),
                           input_text(layers, i, 0).c_str(), shape_text(other.out).c_str(),
                           input_text(layers, i, 1).c_str()));
    l.out = l.in;
}

std::string describe(const Layer &l, const std::vector<Layer> &layers) {
    return "add " + layers[size_t(l.inputs[1])].name;
}

// y = x0 + x1
void forward(const OpArgs &a) {
    const size_t count = size_t(a.n) * size_t(a.l->out.size());
    a.be->copy(a.s, a.y, a.x[0], count * sizeof(float));
    a.be->add(a.s, a.y, a.x[1], count);
}

// dx0 = dx1 = dy
void backward(const OpArgs &a) {
    const size_t bytes = size_t(a.n) * size_t(a.l->out.size()) * sizeof(float);
    for (int j = 0; j < 2; ++j)
        if (a.dx[j]) a.be->copy(a.s, a.dx[j], a.dy, bytes);
}

const OpKernels kKernels{nullptr, nullptr, forward, backward};

}  // namespace

const OpDesc op_add{"add", {"add"}, parse, infer, describe, nullptr, nullptr, &kKernels, true};

}  // namespace snn
