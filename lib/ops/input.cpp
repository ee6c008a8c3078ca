// input N | input HxWxC: the samples the caller sets; no kernel runs.
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    if (st.size() != 2) spec_error(st[0], "input takes one size: N or HxWxC", "");
    int64_t h = 0, w = 0, c = 0;
    int n = parse_dims(st[1].text, false, &h, &w, &c);
    if (n == 1)
        l.out = {h, 1, 1, false};
    else if (n == 3)
        l.out = {c, h, w, true};
    else
        spec_error(st[1], "input size must be N or HxWxC with positive integers", "");
    l.bias = false;
}

void infer(Layer &, const std::vector<Layer> &, size_t) {}

std::string describe(const Layer &l, const std::vector<Layer> &) { return "input " + shape_text(l.out); }

const OpKernels kNone{};

}  // namespace

const OpDesc op_input{"input", {"input"}, parse, infer, describe, nullptr, nullptr, &kNone};

}  // namespace snn
