// input N | input HxWxC | input seq TxF | input tokens T vocab=V: the samples
// the caller sets; no kernel runs. A sequence is [T][F] per sample; token
// ids are T integers in [0, V) per sample, set with snn_set_tokens (the
// vocabulary size is kept in Layer::units).
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse_sequence(const Statement &st, Layer &l) {
    int64_t t = 0, f = 0;
    if (st.size() != 3 || parse_dims(st[2].text, false, &t, &f, nullptr) != 2)
        spec_error(st.size() < 3 ? st[1] : st[2], "input seq takes TxF: T steps of F features, positive integers", "");
    l.out = seq_shape(f, t);
}

void parse_tokens(const Statement &st, Layer &l) {
    int64_t t = 0;
    if (st.size() < 3 || !parse_int(st[2].text, 0, st[2].text.size(), false, &t))
        spec_error(st.size() < 3 ? st[1] : st[2], "input tokens takes T (steps per sample) and vocab=V", "");
    for (size_t i = 3; i < st.size(); ++i) {
        if (starts_with(st[i].text, "vocab=") && l.units == 0) {
            if (!parse_int(st[i].text, 6, st[i].text.size(), false, &l.units) || l.units > (int64_t(1) << 24))
                spec_error(st[i], "vocab must be an integer in [1, 2^24] (token ids are exact in float32 up to 2^24)",
                           "");
        } else {
            unknown_option(st[i], "input tokens", "vocab=V");
        }
    }
    if (l.units == 0) spec_error(st[0], "input tokens needs vocab=V (the number of token ids)", "");
    l.out = seq_shape(1, t);
    l.out.is_tokens = true;
}

void parse(const Statement &st, Layer &l, const NameIndex &) {
    l.bias = false;
    if (st.size() >= 2 && st[1].text == "seq") return parse_sequence(st, l);
    if (st.size() >= 2 && st[1].text == "tokens") return parse_tokens(st, l);
    if (st.size() != 2)
        spec_error(st[0], "input takes one size: N or HxWxC (or seq TxF, or tokens T vocab=V)", "");
    int64_t h = 0, w = 0, c = 0;
    int n = parse_dims(st[1].text, false, &h, &w, &c);
    if (n == 1)
        l.out = {h, 1, 1, false};
    else if (n == 3)
        l.out = {c, h, w, true};
    else
        spec_error(st[1], "input size must be N or HxWxC with positive integers (or seq TxF, or tokens T vocab=V)",
                   "");
}

void infer(Layer &, const std::vector<Layer> &, size_t) {}

std::string describe(const Layer &l, const std::vector<Layer> &) {
    if (l.out.is_tokens) return format("input tokens %lld vocab=%lld", (long long)l.out.h, (long long)l.units);
    return "input " + shape_text(l.out);
}

const OpKernels kNone{};

}  // namespace

const OpDesc op_input{"input", {"input"}, parse, infer, describe, nullptr, nullptr, &kNone};

}  // namespace snn
