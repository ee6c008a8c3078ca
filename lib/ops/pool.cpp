// maxpool KH[xKW] [stride=S] and avgpool KH[xKW] [stride=S]: windows over
// each channel, no padding, floor division (torch.nn.MaxPool2d,
// AvgPool2d). maxpool keeps its input and output (the gradient goes to the
// first maximum of each window, found again); avgpool keeps nothing.
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    int n = st.size() >= 2 ? parse_dims(st[1].text, false, &l.kh, &l.kw, nullptr) : 0;
    if (n != 1 && n != 2) spec_error(st.size() < 2 ? st[0] : st[1], "pooling needs a size K or KHxKW", "");
    l.sh = l.kh;
    l.sw = l.kw;
    for (size_t i = 2; i < st.size(); ++i)
        if (!parse_stride_pad(st[i], l, false))
            unknown_option(st[i], st[0].text.c_str(), "stride=S, name=... or from=...");
    l.bias = false;
}

void infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    const Shape &in = l.in;
    if (!in.is_image) shape_error(layers, i, "input is a vector of " + shape_text(in) + "; pooling needs an image input");
    if (in.h < l.kh || in.w < l.kw)
        shape_error(layers, i,
                    format("input %s is smaller than the pool %lldx%lld", shape_text(in).c_str(), (long long)l.kh,
                           (long long)l.kw));
    l.out = {in.c, window_out(in.h, l.kh, l.sh, 0), window_out(in.w, l.kw, l.sw, 0), true};
    const bool max = l.kind == OpKind::maxpool;
    l.keeps_input = max;
    l.keeps_output = max;
}

std::string describe(const Layer &l, const std::vector<Layer> &) {
    std::string s = std::string(l.kind == OpKind::maxpool ? "maxpool " : "avgpool ") + pair_text(l.kh, l.kw);
    if (l.sh != l.kh || l.sw != l.kw) s += " stride=" + pair_text(l.sh, l.sw);
    return s;
}

}  // namespace

const OpDesc op_maxpool{"maxpool", {"maxpool"}, parse, infer, describe, nullptr, nullptr, nullptr};
const OpDesc op_avgpool{"avgpool", {"avgpool"}, parse, infer, describe, nullptr, nullptr, nullptr};

}  // namespace snn
