// dropout P: in training mode each element is zeroed with probability P and
// the others scaled by 1/(1-P) (inverted dropout, as torch.nn.Dropout); in
// inference mode y = x. The mask comes from the cache's seeded generator
// (engine/math.h dropout_scale). Keeps the mask's scales in aux.
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const std::vector<Layer> &) {
    l.bias = false;
    if (st.size() < 2 || !parse_real(st[1].text, &l.p) || !(l.p >= 0.0 && l.p < 1.0))
        spec_error(st.size() < 2 ? st[0] : st[1], "dropout needs a probability P with 0 <= P < 1", "");
    if (st.size() > 2) unknown_option(st[2], "dropout", "no options but name=...");
}

void infer(Layer &l, const std::vector<Layer> &, size_t) {
    l.out = l.in;
    l.aux_per_sample = size_t(l.out.size());
}

std::string describe(const Layer &l, const std::vector<Layer> &) { return "dropout " + real_text(l.p); }

}  // namespace

const OpDesc op_dropout{"dropout", {"dropout"}, parse, infer, describe, nullptr, nullptr, nullptr};

}  // namespace snn
