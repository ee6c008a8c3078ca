// globalavgpool: the mean of each channel of an image, giving a Cx1x1 image
// (torch.nn.AdaptiveAvgPool2d(1)); follow it with flatten for a vector. An
// average pool whose window is the whole image, run by the avgpool kernels.
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    l.bias = false;
    if (st.size() > 1) unknown_option(st[1], "globalavgpool", "no options but name=... or from=...");
}

void infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    if (!l.in.is_image)
        shape_error(layers, i, "input is a vector of " + shape_text(l.in) + "; globalavgpool needs an image input");
    l.kh = l.sh = l.in.h;
    l.kw = l.sw = l.in.w;
    l.out = {l.in.c, 1, 1, true};
}

std::string describe(const Layer &, const std::vector<Layer> &) { return "globalavgpool"; }

}  // namespace

const OpDesc op_globalavgpool{"globalavgpool", {"globalavgpool"}, parse, infer, describe, nullptr, nullptr, nullptr};

}  // namespace snn
