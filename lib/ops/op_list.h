// The registry of ops: one line per op. Each name is an op kind
// (OpKind::name), its descriptor op_<name> (lib/ops/<file>.cpp) and its
// kernels on each backend (cpu_op_<name>, cuda_op_<name>). See
// docs/adding-an-op.md.
#pragma once

#define SNN_OP_LIST(X) \
    X(input)           \
    X(dense)           \
    X(conv)            \
    X(maxpool)         \
    X(avgpool)         \
    X(flatten)         \
    X(add)             \
    X(concat)          \
    X(activation)      \
    X(softmax)         \
    X(batchnorm)       \
    X(layernorm)       \
    X(dropout)         \
    X(globalavgpool)

namespace snn {

enum class OpKind : int32_t {
#define SNN_OP_ENUM(name) name,
    SNN_OP_LIST(SNN_OP_ENUM)
#undef SNN_OP_ENUM
};

}  // namespace snn
