// embedding D [pad=P]: token ids [T] -> a sequence [T][D], y[t] = W[id[t]]
// as torch.nn.Embedding, W [V][D] (V = the token input's vocab). Starts
// N(0, 1); with pad=P the row P starts at zero and gets no gradient
// (torch's padding_idx). Keeps its input (the ids) for the weight gradient;
// token ids have no gradient. Every step is looked up and gets the
// gradient of its output, padded steps included (nothing downstream reads
// those, so theirs is 0).
#include "common/error.h"
#include "core/rng.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    if (st.size() < 2 || !parse_int(st[1].text, 0, st[1].text.size(), false, &l.units))
        spec_error(st.size() < 2 ? st[0] : st[1], "embedding needs a positive number of features D", "");
    for (size_t i = 2; i < st.size(); ++i) {
        if (!starts_with(st[i].text, "pad=")) unknown_option(st[i], "embedding", "pad=P, name=... or from=...");
        if (!parse_int(st[i].text, 4, st[i].text.size(), true, &l.pad_index))
            spec_error(st[i], "pad must be a token id, an integer >= 0", "");
    }
}

void infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    const int64_t vocab = layers[size_t(l.inputs[0])].units;
    if (l.pad_index >= vocab)
        shape_error(layers, i,
                    format("pad=%lld is not a token id of the vocabulary of %lld", (long long)l.pad_index,
                           (long long)vocab));
    l.out = seq_shape(l.units, l.in.steps());
    l.weight_count = size_t(checked_mul(vocab, l.units, kMaxElements, layers, i, "weights"));
    l.tensors = {{"weight", {vocab, l.units}, false, false, 0, l.weight_count}};
    l.keeps_input = true;
}

std::string describe(const Layer &l, const std::vector<Layer> &) {
    std::string s = format("embedding %lld", (long long)l.units);
    if (l.pad_index >= 0) s += format(" pad=%lld", (long long)l.pad_index);
    return s;
}

void init(const Layer &l, uint64_t seed, float *params, float *) {
    if (!params) return;
    Rng rng(seed);
    for (size_t k = 0; k < l.weight_count; ++k) params[k] = float(normal(rng));
    if (l.pad_index >= 0)
        for (int64_t f = 0; f < l.units; ++f) params[l.pad_index * l.units + f] = 0.0f;
}

}  // namespace

const OpDesc op_embedding{"embedding", {"embedding"}, parse, infer, describe, init, nullptr, nullptr,
                          false, false, true};

}  // namespace snn
