// relu | leaky_relu | tanh | sigmoid | gelu | silu as a layer of its own:
// y = act(x) element-wise. Keeps its output, or its input for gelu and silu
// (whose derivatives need z).
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    parse_act(st[0].text, &l.act);
    l.bias = false;
    if (st.size() > 1) unknown_option(st[1], st[0].text.c_str(), "no options but name=... or from=...");
}

void infer(Layer &l, const std::vector<Layer> &, size_t) {
    l.out = l.in;
    l.keeps_input = act_uses_input(l.act);
    l.keeps_output = !l.keeps_input;
}

std::string describe(const Layer &l, const std::vector<Layer> &) { return act_name(l.act); }

}  // namespace

const OpDesc op_activation{"activation", {"relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu"},
                           parse, infer, describe, nullptr, nullptr, nullptr, true};

}  // namespace snn
