// flatten: an image becomes a vector of c*h*w features, same memory (NCHW
// order, as torch.flatten); no kernel runs, the gradient passes through.
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    l.bias = false;
    if (st.size() > 1) unknown_option(st[1], "flatten", "no options");
}

void infer(Layer &l, const std::vector<Layer> &, size_t) {
    l.out = {l.in.size(), 1, 1, false};
    l.alias = true;
}

std::string describe(const Layer &, const std::vector<Layer> &) { return "flatten"; }

const OpKernels kNone{};

}  // namespace

const OpDesc op_flatten{"flatten", {"flatten"}, parse, infer, describe, nullptr, nullptr, &kNone, true};

}  // namespace snn
