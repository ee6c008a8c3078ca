// attention heads=H [causal]: multi-head self-attention over a sequence
// [T][E] (E divisible by H), as torch.nn.MultiheadAttention(E, H,
// batch_first=True)(x, x, x, key_padding_mask = steps past each sample's
// length, attn_mask = the upper triangle when causal, need_weights=False):
//   [Q K V] = x W_in^T + b_in                      [T][3E]
//   P_h     = softmax(Q_h K_h^T / sqrt(E/H))       [T][T], masked keys get 0
//   C       = [P_1 V_1 ... P_H V_H]                [T][E]
//   y       = C W_out^T + b_out                    [T][E]
// Query t sees key j when j < length (and j <= t when causal); key 0 always.
// Queries at padded steps are computed like the others.
//
// Parameters, in PyTorch's order and names: in_proj_weight [3E][E],
// in_proj_bias [3E], out_proj.weight [E][E], out_proj.bias [E] (all counted
// as weights). Init as PyTorch: xavier_uniform in_proj_weight, out_proj.weight
// uniform(+-1/sqrt(E)) (nn.Linear's default), zero biases.
//
// Keeps its input (for dW_in) and, in aux per sample: the in-projection
// [T][3E] (Q, K, V of step t side by side), the probabilities [H][T][T] and
// the context C [T][E] before out_proj.
#include <cmath>

#include "common/error.h"
#include "core/rng.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    l.bias = false;
    for (size_t i = 1; i < st.size(); ++i) {
        if (starts_with(st[i].text, "heads=")) {
            if (!parse_int(st[i].text, 6, st[i].text.size(), false, &l.heads))
                spec_error(st[i], "heads must be a positive integer", "");
        } else if (st[i].text == "causal") {
            if (l.causal) spec_error(st[i], "causal is given twice in one layer", "");
            l.causal = true;
        } else {
            unknown_option(st[i], "attention", "heads=H, causal, name=... or from=...");
        }
    }
    if (l.heads == 0) spec_error(st[0], "attention needs heads=H (the number of heads)", "");
}

void infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    const int64_t e = l.in.c, t = l.in.h;
    if (e % l.heads != 0)
        shape_error(layers, i,
                    format("%lld features do not split into %lld heads (heads=H must divide the features)",
                           (long long)e, (long long)l.heads));
    l.out = l.in;
    const int64_t in_w = checked_mul(3 * e, e, kMaxElements, layers, i, "in-projection weights");
    const int64_t scores = checked_mul(l.heads, checked_mul(t, t, kMaxElements, layers, i, "scores per head"),
                                       kMaxElements, layers, i, "attention scores per sample");
    l.weight_count = size_t(in_w + 3 * e + e * e + e);
    l.bias_count = 0;
    l.tensors = {{"in_proj_weight", {3 * e, e}, false, false, 0, size_t(in_w)},
                 {"in_proj_bias", {3 * e}, false, false, size_t(in_w), size_t(3 * e)},
                 {"out_proj.weight", {e, e}, false, false, size_t(in_w + 3 * e), size_t(e * e)},
                 {"out_proj.bias", {e}, false, false, size_t(in_w + 3 * e + e * e), size_t(e)}};
    l.keeps_input = true;
    l.aux_per_sample = size_t(4 * t * e + scores);
}

std::string describe(const Layer &l, const std::vector<Layer> &) {
    return format("attention heads=%lld", (long long)l.heads) + (l.causal ? " causal" : "");
}

// Uniform in (-limit, limit) for each of count values.
void uniform(Rng &rng, double limit, float *w, size_t count) {
    for (size_t k = 0; k < count; ++k) w[k] = float(limit * (2.0 * rng.uniform() - 1.0));
}

void init(const Layer &l, uint64_t seed, float *params, float *) {
    if (!params) return;
    const size_t e = size_t(l.in.c);
    Rng rng(seed);
    uniform(rng, std::sqrt(6.0 / double(4 * e)), params, 3 * e * e);  // fan_in E, fan_out 3E
    float *out_w = params + 3 * e * e + 3 * e;
    uniform(rng, 1.0 / std::sqrt(double(e)), out_w, e * e);
    for (size_t k = 0; k < 3 * e; ++k) params[3 * e * e + k] = 0.0f;
    for (size_t k = 0; k < e; ++k) out_w[e * e + k] = 0.0f;
}

}  // namespace

const OpDesc op_attention{"attention", {"attention"}, parse, infer, describe, init, nullptr, nullptr, true, true, false, true};

}  // namespace snn
