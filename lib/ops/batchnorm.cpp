// batchnorm [eps=E] [momentum=M]: torch.nn.BatchNorm2d on images (statistics
// per channel over the batch and the pixels), BatchNorm1d on vectors (per
// feature over the batch). y = (x - mean) / sqrt(var + eps) * weight + bias.
// Training mode uses the batch's mean and biased variance and updates the
// running statistics: running = (1 - M) running + M batch, the variance's
// unbiased (x n/(n-1)); inference mode uses the running statistics.
// Parameters weight [C] (starts at 1), bias [C] (0); state running_mean [C]
// (0), running_var [C] (1), num_batches_tracked (a count, held as a float:
// exact up to 2^24 batches). Keeps its input and, in aux, the mean and
// 1/sqrt(var + eps) used ([2][C]).
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    for (size_t i = 1; i < st.size(); ++i) {
        const Token &t = st[i];
        if (parse_eps(t, l)) continue;
        if (starts_with(t.text, "momentum=")) {
            if (!parse_real(t.text.substr(9), &l.momentum) || !(l.momentum >= 0.0 && l.momentum <= 1.0))
                spec_error(t, "momentum must be a number with 0 <= momentum <= 1", "");
        } else {
            unknown_option(t, "batchnorm", "eps=E, momentum=M, name=... or from=...");
        }
    }
}

void infer(Layer &l, const std::vector<Layer> &, size_t) {
    const int64_t c = l.in.is_image ? l.in.c : l.in.size();
    l.out = l.in;
    l.weight_count = size_t(c);
    l.bias_count = size_t(c);
    l.state_count = 2 * size_t(c) + 1;
    l.tensors = {{"weight", {c}, false, false, 0, size_t(c)},
                 {"bias", {c}, false, false, size_t(c), size_t(c)},
                 {"running_mean", {c}, true, false, 0, size_t(c)},
                 {"running_var", {c}, true, false, size_t(c), size_t(c)},
                 {"num_batches_tracked", {}, true, true, 2 * size_t(c), 1}};
    l.keeps_input = true;
    l.aux_fixed = 2 * size_t(c);
}

std::string describe(const Layer &l, const std::vector<Layer> &) {
    std::string s = "batchnorm";
    if (l.eps != 1e-5) s += " eps=" + real_text(l.eps);
    if (l.momentum != 0.1) s += " momentum=" + real_text(l.momentum);
    return s;
}

void init(const Layer &l, uint64_t, float *params, float *state) {
    const size_t c = l.weight_count;
    for (size_t i = 0; params && i < c; ++i) {
        params[i] = 1.0f;
        params[c + i] = 0.0f;
    }
    for (size_t i = 0; state && i < c; ++i) {
        state[i] = 0.0f;
        state[c + i] = 1.0f;
    }
    if (state) state[2 * c] = 0.0f;
}

void check(const Layer &l, int64_t n, bool training) {
    const int64_t per_channel = l.in.is_image ? n * l.in.h * l.in.w : n;
    if (training && per_channel < 2)
        fail(SNN_ERR_BATCH,
             "batchnorm in training mode needs more than one value per channel (batch %lld of %s); use a larger "
             "batch or snn_cache_set_training(cache, 0)",
             (long long)n, shape_text(l.in).c_str());
}

}  // namespace

const OpDesc op_batchnorm{"batchnorm", {"batchnorm"}, parse, infer, describe, init, check, nullptr};

}  // namespace snn
