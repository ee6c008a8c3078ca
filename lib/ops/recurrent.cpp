// The descriptor parts lstm and gru share (ops/recurrent.h).
#include "ops/recurrent.h"

#include <cmath>

#include "common/error.h"
#include "core/rng.h"

namespace snn {

void recurrent_parse(const Statement &st, Layer &l, const char *op) {
    if (st.size() < 2 || !parse_int(st[1].text, 0, st[1].text.size(), false, &l.units))
        spec_error(st.size() < 2 ? st[0] : st[1], format("%s needs a positive hidden size", op).c_str(), "");
    const Token *seen_bidirectional = nullptr, *seen_last = nullptr;
    for (size_t i = 2; i < st.size(); ++i) {
        const Token &t = st[i];
        const Token **seen = t.text == "bidirectional" ? &seen_bidirectional : t.text == "last" ? &seen_last : nullptr;
        if (seen) {
            if (*seen)
                spec_error(t, "",
                           format("%s is given twice in one layer (first at position %zu: '%s')", t.text.c_str(),
                                  (*seen)->pos, (*seen)->text.c_str()));
            *seen = &t;
        } else if (t.text == "nobias") {
            l.bias = false;
        } else {
            unknown_option(t, op, "bidirectional, last, nobias, name=... or from=...");
        }
    }
    l.bidirectional = seen_bidirectional != nullptr;
    l.last = seen_last != nullptr;
}

void recurrent_infer(Layer &l, const std::vector<Layer> &layers, size_t i) {
    const RecurrentDims d = recurrent_dims(l);
    const int64_t gh = checked_mul(d.G, d.H, kMaxElements, layers, i, "gate rows");
    const int64_t per_dir = checked_mul(gh, d.F + d.H, kMaxElements, layers, i, "weights") + (d.bias ? 2 * gh : 0);
    l.weight_count = size_t(checked_mul(per_dir, d.dirs, kMaxElements, layers, i, "weights"));
    l.bias_count = 0;
    const int64_t out = d.out_features();
    l.out = d.last ? Shape{out, 1, 1, false} : seq_shape(out, d.T);
    l.tensors.clear();
    for (int64_t dir = 0; dir < d.dirs; ++dir) {
        const std::string suffix = dir ? "_l0_reverse" : "_l0";
        l.tensors.push_back({"weight_ih" + suffix, {gh, d.F}, false, false, d.w_ih(dir), size_t(gh * d.F)});
        l.tensors.push_back({"weight_hh" + suffix, {gh, d.H}, false, false, d.w_hh(dir), size_t(gh * d.H)});
        if (!d.bias) continue;
        l.tensors.push_back({"bias_ih" + suffix, {gh}, false, false, d.b_ih(dir), size_t(gh)});
        l.tensors.push_back({"bias_hh" + suffix, {gh}, false, false, d.b_hh(dir), size_t(gh)});
    }
    l.keeps_input = true;
    const int64_t per_step = checked_mul(gh + 2 * d.H, d.dirs, kMaxElements, layers, i, "kept values per step");
    l.aux_per_sample = size_t(checked_mul(per_step, d.T, kMaxElements, layers, i, "kept values per sample"));
}

std::string recurrent_describe(const Layer &l, const char *op) {
    std::string s = format("%s %lld", op, (long long)l.units);
    if (l.bidirectional) s += " bidirectional";
    if (l.last) s += " last";
    if (!l.bias) s += " nobias";
    return s;
}

void recurrent_init(const Layer &l, uint64_t seed, float *params, float *) {
    if (!params) return;
    Rng rng(seed);
    const double limit = 1.0 / std::sqrt(double(l.units));
    for (size_t k = 0; k < l.weight_count; ++k) params[k] = float(limit * (2.0 * rng.uniform() - 1.0));
}

}  // namespace snn
