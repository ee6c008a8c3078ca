// conv KHxKW OUT [act] [stride=S] [pad=P] [nobias] [init=I]: 2-D
// cross-correlation as torch.nn.Conv2d, W [out][in][kh][kw], b [out], then
// act. Keeps its input and output (or z in aux for gelu and silu).
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    int n = st.size() >= 2 ? parse_dims(st[1].text, false, &l.kh, &l.kw, nullptr) : 0;
    if (n != 1 && n != 2) spec_error(st.size() < 2 ? st[0] : st[1], "conv needs a kernel size K or KHxKW", "");
    if (st.size() < 3 || !parse_int(st[2].text, 0, st[2].text.size(), false, &l.units))
        spec_error(st.size() < 3 ? st[1] : st[2], "conv needs a positive number of output channels", "");
    for (size_t i = 3; i < st.size(); ++i)
        if (!parse_common_option(st[i], l) && !parse_stride_pad(st[i], l, true))
            unknown_option(st[i], "conv", "an activation, stride=S, pad=P, nobias, init=..., name=... or from=...");
}

void infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    const Shape &in = l.in;
    if (!in.is_image)
        shape_error(layers, i,
                    "input is a vector of " + shape_text(in) + "; conv needs an image input (input HxWxC)");
    if (in.h + 2 * l.ph < l.kh || in.w + 2 * l.pw < l.kw)
        shape_error(layers, i,
                    format("input %s (padded by %lldx%lld) is smaller than the kernel %lldx%lld",
                           shape_text(in).c_str(), (long long)l.ph, (long long)l.pw, (long long)l.kh,
                           (long long)l.kw));
    l.out = {l.units, window_out(in.h, l.kh, l.sh, l.ph), window_out(in.w, l.kw, l.sw, l.pw), true};
    const int64_t rows = checked_mul(checked_mul(in.c, l.kh, kMaxElements, layers, i, "weights per output channel"),
                                     l.kw, kMaxElements, layers, i, "weights per output channel");
    l.weight_count = size_t(checked_mul(l.units, rows, kMaxElements, layers, i, "weights"));
    if (l.out.h > kMaxElements / l.out.w || l.out.c > kMaxElements / (l.out.h * l.out.w))
        shape_error(layers, i,
                    format("output %s is too large: more than 2^31 elements per sample", shape_text(l.out).c_str()));
    // Lowered to a matrix (im2col), a sample holds (in.c kh kw + out.c) x (out.h out.w) values.
    checked_mul(rows + l.units, l.out.h * l.out.w, kMaxLowered, layers, i, "lowered input per sample");
    l.bias_count = l.bias ? size_t(l.units) : 0;
    l.tensors = {{"weight", {l.units, in.c, l.kh, l.kw}, false, false, 0, l.weight_count}};
    if (l.bias) l.tensors.push_back({"bias", {l.units}, false, false, l.weight_count, l.bias_count});
    l.keeps_input = true;
    l.keeps_output = true;
    l.aux_per_sample = act_uses_input(l.act) ? size_t(l.out.size()) : 0;
}

std::string describe(const Layer &l, const std::vector<Layer> &) {
    std::string s = "conv " + pair_text(l.kh, l.kw) + format(" %lld", (long long)l.units);
    if (l.sh != 1 || l.sw != 1) s += " stride=" + pair_text(l.sh, l.sw);
    if (l.ph != 0 || l.pw != 0) s += " pad=" + pair_text(l.ph, l.pw);
    return s + common_options_text(l);
}

}  // namespace

const OpDesc op_conv{"conv", {"conv"}, parse, infer, describe, nullptr, nullptr, nullptr, false, false, false, true};

}  // namespace snn
