// The registry of ops: one line per op. Each name is an op kind
// (OpKind::name), its descriptor op_<name> (lib/ops/<file>.cpp) and its
// kernels on each backend (cpu_op_<name>, cuda_op_<name>), unless it is in
// SNN_GENERIC_OP_LIST. See docs/adding-an-op.md.
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
    X(globalavgpool)   \
    X(embedding)       \
    X(posembed)        \
    X(seqpool)         \
    X(conv1d)          \
    X(attention)       \
    X(lstm)            \
    X(gru)

// The ops whose kernels are written on Backend primitives alone
// (OpDesc::generic), which every backend runs: they have no cpu_op_<name>
// or cuda_op_<name>. Every other op must define cpu_op_<name>.
#define SNN_GENERIC_OP_LIST(X) \
    X(input)                   \
    X(flatten)                 \
    X(add)                     \
    X(concat)

namespace snn {

enum class OpKind : int32_t {
#define SNN_OP_ENUM(name) name,
    SNN_OP_LIST(SNN_OP_ENUM)
#undef SNN_OP_ENUM
};

constexpr bool op_is_generic(OpKind kind) {
#define SNN_OP_GENERIC_CASE(name) \
    if (kind == OpKind::name) return true;
    SNN_GENERIC_OP_LIST(SNN_OP_GENERIC_CASE)
#undef SNN_OP_GENERIC_CASE
    return false;
}

}  // namespace snn
