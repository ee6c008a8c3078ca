// layernorm [eps=E]: torch.nn.LayerNorm over each sample's whole shape (its
// features, or channels x height x width): y = (x - mean) / sqrt(var + eps)
// * weight + bias, mean and biased variance per sample, weight and bias of
// the sample's shape ([F] or [C][H][W]; start at 1 and 0); on a sequence
// [T][F], nn.LayerNorm(F) over each step. The same in both modes. Keeps its input and, in aux, each sample's mean and
// 1/sqrt(var + eps).
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    for (size_t i = 1; i < st.size(); ++i)
        if (!parse_eps(st[i], l)) unknown_option(st[i], "layernorm", "eps=E, name=... or from=...");
}

void infer(Layer &l, const std::vector<Layer> &, size_t) {
    const size_t f = size_t(l.in.row_size());
    l.out = l.in;
    l.weight_count = f;
    l.bias_count = f;
    std::vector<int64_t> shape = l.in.is_image ? std::vector<int64_t>{l.in.c, l.in.h, l.in.w}
                                               : std::vector<int64_t>{l.in.c};  // a vector, or each step's F
    l.tensors = {{"weight", shape, false, false, 0, f}, {"bias", shape, false, false, f, f}};
    l.keeps_input = true;
    l.aux_per_sample = 2 * size_t(l.in.steps());
}

std::string describe(const Layer &l, const std::vector<Layer> &) {
    return l.eps != 1e-5 ? "layernorm eps=" + real_text(l.eps) : "layernorm";
}

void init(const Layer &l, uint64_t, float *params, float *) {
    for (size_t i = 0; params && i < l.weight_count; ++i) {
        params[i] = 1.0f;
        params[l.weight_count + i] = 0.0f;
    }
}

}  // namespace

const OpDesc op_layernorm{"layernorm", {"layernorm"}, parse, infer, describe, init, nullptr, nullptr, true};

}  // namespace snn
