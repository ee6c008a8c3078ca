// dropout P: in training mode each element is zeroed with probability P and
// the others scaled by 1/(1-P) (inverted dropout, as torch.nn.Dropout); in
// inference mode y = x. The mask comes from the cache's seeded generator
// (core/math.h dropout_scale). Keeps the mask's scales in aux.
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

// The mask keeps an element when a uniform 24-bit number u / 2^24 >= P, so
// the probabilities it can draw are 0 and [2^-24, 1 - 2^-24].
bool drawn(double p) { return p == 0.0 || (p >= 1.0 / 16777216.0 && p <= 1.0 - 1.0 / 16777216.0); }

void parse(const Statement &st, Layer &l, const NameIndex &) {
    l.bias = false;
    if (st.size() < 2 || !parse_real(st[1].text, &l.p) || !drawn(l.p))
        spec_error(st.size() < 2 ? st[0] : st[1],
                   "dropout needs a probability P = 0 or in [5.96046448e-08, 0.99999994]",
                   " (the mask draws 24-bit uniform numbers, which cannot give a probability in (0, 2^-24) or "
                   "(1 - 2^-24, 1))");
    if (st.size() > 2) unknown_option(st[2], "dropout", "no options but name=... or from=...");
}

void infer(Layer &l, const std::vector<Layer> &, size_t) {
    l.out = l.in;
    l.aux_per_sample = size_t(l.out.size());
}

std::string describe(const Layer &l, const std::vector<Layer> &) { return "dropout " + real_text(l.p); }

}  // namespace

const OpDesc op_dropout{"dropout", {"dropout"}, parse, infer, describe, nullptr, nullptr, nullptr, true};

}  // namespace snn
