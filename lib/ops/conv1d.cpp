// conv1d K OUT [act] [stride=S] [pad=P] [dilation=D] [nobias] [init=I]:
// torch.nn.Conv1d over a sequence [T][C] (channels last) -> [T'][OUT],
//   z[t][o] = b[o] + sum over c, k of W[o][c][k] x[t S - P + k D][c],
//   T' = floor((T + 2P - D(K-1) - 1) / S) + 1,
// then act; W [OUT][C][K] (Conv1d's layout), b [OUT]. Input steps outside
// [0, length) count as zeros, so a sample's valid outputs are those of a
// Conv1d over the sample cut at its length. Keeps its input and output (or
// z in aux for gelu and silu).
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

bool parse_size_option(const Token &t, const char *key, bool allow_zero, int64_t *v) {
    const size_t n = std::string(key).size();
    if (!starts_with(t.text, key)) return false;
    if (!parse_int(t.text, n, t.text.size(), allow_zero, v))
        spec_error(t, allow_zero ? "expected an integer >= 0 after '='" : "expected a positive integer after '='",
                   "");
    return true;
}

void parse(const Statement &st, Layer &l, const NameIndex &) {
    if (st.size() < 2 || !parse_int(st[1].text, 0, st[1].text.size(), false, &l.kh))
        spec_error(st.size() < 2 ? st[0] : st[1], "conv1d needs a kernel size K, a positive integer", "");
    if (st.size() < 3 || !parse_int(st[2].text, 0, st[2].text.size(), false, &l.units))
        spec_error(st.size() < 3 ? st[1] : st[2], "conv1d needs a positive number of output channels", "");
    for (size_t i = 3; i < st.size(); ++i)
        if (!parse_common_option(st[i], l) && !parse_size_option(st[i], "stride=", false, &l.sh) &&
            !parse_size_option(st[i], "pad=", true, &l.ph) &&
            !parse_size_option(st[i], "dilation=", false, &l.dilation))
            unknown_option(st[i], "conv1d",
                           "an activation, stride=S, pad=P, dilation=D, nobias, init=..., name=... or from=...");
}

void infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    const int64_t steps = l.in.steps(), channels = l.in.row_size();
    const int64_t span = l.dilation * (l.kh - 1) + 1;
    if (steps + 2 * l.ph < span)
        shape_error(layers, i,
                    format("input %s (padded by %lld) is shorter than the kernel's span of %lld steps "
                           "(dilation %lld x (K - 1) + 1)",
                           shape_text(l.in).c_str(), (long long)l.ph, (long long)span, (long long)l.dilation));
    l.out = seq_shape(l.units, (steps + 2 * l.ph - span) / l.sh + 1);
    const int64_t rows = checked_mul(channels, l.kh, kMaxElements, layers, i, "weights per output channel");
    l.weight_count = size_t(checked_mul(l.units, rows, kMaxElements, layers, i, "weights"));
    // Lowered, a sample holds T' x (C K) values.
    checked_mul(rows, l.out.steps(), kMaxLowered, layers, i, "lowered input per sample");
    l.bias_count = l.bias ? size_t(l.units) : 0;
    l.tensors = {{"weight", {l.units, channels, l.kh}, false, false, 0, l.weight_count}};
    if (l.bias) l.tensors.push_back({"bias", {l.units}, false, false, l.weight_count, l.bias_count});
    l.keeps_input = true;
    l.keeps_output = true;
    l.aux_per_sample = act_uses_input(l.act) ? size_t(l.out.size()) : 0;
}

std::string describe(const Layer &l, const std::vector<Layer> &) {
    std::string s = format("conv1d %lld %lld", (long long)l.kh, (long long)l.units);
    if (l.sh != 1) s += format(" stride=%lld", (long long)l.sh);
    if (l.ph != 0) s += format(" pad=%lld", (long long)l.ph);
    if (l.dilation != 1) s += format(" dilation=%lld", (long long)l.dilation);
    return s + common_options_text(l);
}

}  // namespace

const OpDesc op_conv1d{"conv1d", {"conv1d"}, parse, infer, describe, nullptr, nullptr, nullptr, true, true, false, true};

}  // namespace snn
