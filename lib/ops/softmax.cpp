// softmax: y = e^x / sum e^x over the features of a vector, or over the
// channels of each pixel of an image (torch.nn.Softmax(dim=1)). Keeps its
// output: dx = y (dy - sum(dy y)).
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    l.bias = false;
    if (st.size() > 1) unknown_option(st[1], "softmax", "no options but name=... or from=...");
}

void infer(Layer &l, const std::vector<Layer> &, size_t) {
    l.out = l.in;
    l.keeps_output = true;
}

std::string describe(const Layer &, const std::vector<Layer> &) { return "softmax"; }

}  // namespace

const OpDesc op_softmax{"softmax", {"softmax"}, parse, infer, describe, nullptr, nullptr, nullptr, true};

}  // namespace snn
