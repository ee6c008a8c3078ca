// dense N [act] [nobias] [init=I]: y = act(x W^T + b), W [out][in], b [out].
// On a sequence [T][in] it acts on each step (nn.Linear on the last axis).
// Keeps its input (for dW) and its output (for act'), or for gelu and silu
// the pre-activation z in aux.
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    if (st.size() < 2 || !parse_int(st[1].text, 0, st[1].text.size(), false, &l.units))
        spec_error(st.size() < 2 ? st[0] : st[1], "dense needs a positive number of units", "");
    for (size_t i = 2; i < st.size(); ++i)
        if (!parse_common_option(st[i], l))
            unknown_option(st[i], "dense",
                           "an activation (identity, relu, leaky_relu, tanh, sigmoid, gelu, silu), nobias, init=..., "
                           "name=... or from=...");
}

void infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    if (l.in.is_image)
        shape_error(layers, i, "input is an image " + shape_text(l.in) + "; add 'flatten' before a dense layer");
    const int64_t in = l.in.row_size();  // a sequence: each step's features
    l.out = l.in.is_seq ? seq_shape(l.units, l.in.steps()) : Shape{l.units, 1, 1, false};
    l.weight_count = size_t(checked_mul(l.units, in, kMaxElements, layers, i, "weights"));
    l.bias_count = l.bias ? size_t(l.units) : 0;
    l.tensors = {{"weight", {l.units, in}, false, false, 0, l.weight_count}};
    if (l.bias) l.tensors.push_back({"bias", {l.units}, false, false, l.weight_count, l.bias_count});
    l.keeps_input = true;
    l.keeps_output = true;
    l.aux_per_sample = act_uses_input(l.act) ? size_t(l.out.size()) : 0;
}

std::string describe(const Layer &l, const std::vector<Layer> &) {
    return format("dense %lld", (long long)l.units) + common_options_text(l);
}

}  // namespace

const OpDesc op_dense{"dense", {"dense"}, parse, infer, describe, nullptr, nullptr, nullptr, true, false, false, true};

}  // namespace snn
