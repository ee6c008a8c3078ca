// posembed: a learned positional embedding added to a sequence [T][F],
// y[t] = x[t] + W[t], W [T][F] (torch: nn.Embedding(T, F) indexed by
// arange(T), added). Starts N(0, 0.02). dx = dy; dW[t] sums dy[t] over the
// samples at every step, padded ones included (nothing downstream reads
// those, so their dy is 0). Keeps nothing.
#include "common/error.h"
#include "core/rng.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &, const NameIndex &) {
    if (st.size() > 1) unknown_option(st[1], "posembed", "name=... or from=... (posembed takes no options)");
}

void infer(Layer &l, const std::vector<Layer> &, size_t) {
    l.out = l.in;
    l.weight_count = size_t(l.in.size());
    l.tensors = {{"weight", {l.in.steps(), l.in.row_size()}, false, false, 0, l.weight_count}};
}

std::string describe(const Layer &, const std::vector<Layer> &) { return "posembed"; }

void init(const Layer &l, uint64_t seed, float *params, float *) {
    if (!params) return;
    Rng rng(seed);
    for (size_t k = 0; k < l.weight_count; ++k) params[k] = float(0.02 * normal(rng));
}

}  // namespace

const OpDesc op_posembed{"posembed", {"posembed"}, parse, infer, describe, init, nullptr, nullptr, true, true};

}  // namespace snn
