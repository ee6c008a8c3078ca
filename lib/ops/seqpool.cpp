// seqpool last|mean|max: a sequence [T][F] -> a vector [F] per sample over
// its valid steps t < length (OpArgs::lengths): the last one, their mean, or
// their maximum per feature (the gradient goes to the step of the maximum,
// the first one on ties). The same in both modes. max keeps, in aux, the
// step of each feature's maximum; the others keep nothing.
#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) {
    if (st.size() < 2) spec_error(st[0], "seqpool needs last, mean or max", "");
    if (st[1].text == "last") l.pool = SeqPool::last;
    else if (st[1].text == "mean") l.pool = SeqPool::mean;
    else if (st[1].text == "max") l.pool = SeqPool::max;
    else spec_error(st[1], "seqpool needs last, mean or max", "");
    if (st.size() > 2) unknown_option(st[2], "seqpool", "name=... or from=...");
}

void infer(Layer &l, const std::vector<Layer> &, size_t) {
    l.out = {l.in.row_size(), 1, 1, false};
    l.aux_per_sample = l.pool == SeqPool::max ? size_t(l.in.row_size()) : 0;
}

const char *pool_name(SeqPool p) { return p == SeqPool::last ? "last" : p == SeqPool::mean ? "mean" : "max"; }

std::string describe(const Layer &l, const std::vector<Layer> &) { return std::string("seqpool ") + pool_name(l.pool); }

}  // namespace

const OpDesc op_seqpool{"seqpool", {"seqpool"}, parse, infer, describe, nullptr, nullptr, nullptr, true, true};

}  // namespace snn
