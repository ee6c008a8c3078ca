// concat ID: joins the previous output (or with from= the named one) and the
// output of the layer named ID, the first input first: along channels for
// images of the same height and width (torch.cat(dim=1) on NCHW), along
// features for vectors. Keeps nothing; its kernels are Backend primitives,
// so every backend runs it.
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &names) {
    if (st.size() != 2) spec_error(st[0], "concat takes the name of an earlier layer: concat ID", "");
    l.inputs.push_back(resolve_name(names, st[1]));
    l.bias = false;
}

void infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    const Shape &a = l.in, &b = layers[size_t(l.inputs[1])].out;
    if (a.is_image != b.is_image || (a.is_image && (a.h != b.h || a.w != b.w)))
        shape_error(layers, i,
                    format("cannot join %s (%s) and %s (%s): images need the same height and width, vectors "
                           "join vectors",
                           shape_text(a).c_str(), input_text(layers, i, 0).c_str(), shape_text(b).c_str(),
                           input_text(layers, i, 1).c_str()));
    l.out = a;
    l.out.c = a.c + b.c;  // both below 2^31 elements per sample: no overflow
}

std::string describe(const Layer &l, const std::vector<Layer> &layers) {
    return "concat " + layers[size_t(l.inputs[1])].name;
}

// Per sample, y = [x0 | x1]: each input is a block of rows of its own pitch.
void forward(const OpArgs &a) {
    const size_t out = size_t(a.l->out.size()) * sizeof(float);
    const size_t first = size_t(a.l->in.size()) * sizeof(float);
    a.be->copy2d(a.s, a.y, out, a.x[0], first, first, size_t(a.n));
    a.be->copy2d(a.s, reinterpret_cast<char *>(a.y) + first, out, a.x[1], out - first, out - first, size_t(a.n));
}

void backward(const OpArgs &a) {
    const size_t out = size_t(a.l->out.size()) * sizeof(float);
    const size_t first = size_t(a.l->in.size()) * sizeof(float);
    if (a.dx[0]) a.be->copy2d(a.s, a.dx[0], first, a.dy, out, first, size_t(a.n));
    if (a.dx[1])
        a.be->copy2d(a.s, a.dx[1], out - first, reinterpret_cast<const char *>(a.dy) + first, out, out - first,
                     size_t(a.n));
}

const OpKernels kKernels{nullptr, nullptr, forward, backward};

}  // namespace

const OpDesc op_concat{"concat", {"concat"}, parse, infer, describe, nullptr, nullptr, &kKernels};

}  // namespace snn
