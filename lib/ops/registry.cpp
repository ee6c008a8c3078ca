// The table of op descriptors, made from core/op_list.h.
#include <cstring>

#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

const OpDesc *const kOps[] = {
#define SNN_OP_ENTRY(name) &op_##name,
    SNN_OP_LIST(SNN_OP_ENTRY)
#undef SNN_OP_ENTRY
};
constexpr size_t kOpCount = sizeof(kOps) / sizeof(kOps[0]);

}  // namespace

const OpDesc &op_desc(OpKind kind) {
    const size_t k = size_t(kind);
    if (k >= kOpCount) fail(SNN_ERR_INTERNAL, "op kind %zu is not registered", k);
    return *kOps[k];
}

size_t op_count() { return kOpCount; }

const OpDesc *op_by_word(const std::string &word, OpKind *kind) {
    for (size_t k = 0; k < kOpCount; ++k)
        for (const char *w : kOps[k]->words)
            if (word == w) {
                *kind = static_cast<OpKind>(k);
                return kOps[k];
            }
    return nullptr;
}

const OpKernels *op_kernels(Backend &be, OpKind kind) {
    const OpDesc &d = op_desc(kind);
    return d.generic ? d.generic : be.kernels(kind);
}

}  // namespace snn
