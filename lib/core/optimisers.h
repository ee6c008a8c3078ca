// An optimiser is one descriptor (OptimiserDesc, in engine/optimisers.cpp:
// its public id, names, the hyperparameters it has with PyTorch's defaults,
// the state buffers it keeps) plus its per-element update in core/math.h
// (<name>_update) and one CPU loop (<name>_loop, cpu/optimiser.cpp; the
// CUDA backend instantiates its one update kernel for it), registered by one line in
// SNN_OPTIMISER_LIST. Defaults, hyperparameter checks, checkpoints, the C
// API's kind check and both backends' dispatch are driven by the list.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "snn.h"

// X(name, public id): the kind OptKind::name, the descriptor optimiser_<name>
// and the update, loop and kernel named after it.
#define SNN_OPTIMISER_LIST(X)          \
    X(sgd, SNN_OPTIMISER_SGD)          \
    X(adam, SNN_OPTIMISER_ADAM)        \
    X(adamw, SNN_OPTIMISER_ADAMW)      \
    X(rmsprop, SNN_OPTIMISER_RMSPROP)  \
    X(lion, SNN_OPTIMISER_LION)

namespace snn {

enum class OptKind : int32_t {
#define SNN_OPTIMISER_ENUM(name, id) name,
    SNN_OPTIMISER_LIST(SNN_OPTIMISER_ENUM)
#undef SNN_OPTIMISER_ENUM
};

constexpr size_t kOptimiserCount = 0
#define SNN_OPTIMISER_COUNT(name, id) +1
    SNN_OPTIMISER_LIST(SNN_OPTIMISER_COUNT)
#undef SNN_OPTIMISER_COUNT
    ;

// A hyperparameter an optimiser has, with its default. Hyperparameters every
// kind has (see kHyperparameters) are not listed.
struct HyperparameterDefault {
    snn_hyperparameter id;  // 0 ends the list
    double value;
};

struct OptimiserDesc {
    OptKind kind;
    int32_t id;             // the public snn_optimiser_kind
    const char *constant;   // "SNN_OPTIMISER_ADAMW"
    const char *name;       // for messages: "AdamW"
    const char *key;        // in checkpoints: metadata "optimiser" = "adamw"
    HyperparameterDefault hyperparameters[8];  // PyTorch's defaults
    bool has_m, has_v;      // keeps the state "optimiser.m" / "optimiser.v"
};

// The descriptor of a kind.
const OptimiserDesc &optimiser_desc(OptKind kind);
// The descriptor of a public id, or null when no optimiser has it.
const OptimiserDesc *find_optimiser(int32_t id);
// The descriptor of a public id; throws SNN_ERR_INVALID_ARGUMENT naming the
// known ones when no optimiser has it.
const OptimiserDesc &optimiser_of(int32_t id);
// The descriptor whose checkpoint key is `key`, or null.
const OptimiserDesc *find_optimiser_key(const char *key);
// The checkpoint keys of every optimiser, for messages: "sgd, adam, ...".
const char *optimiser_keys();

// Doubles of device memory an optimiser keeps for clipping by the gradient
// norm: [0] the total norm of the last clipped step, then scratch the
// backends use to reduce it (the CUDA backend one partial sum per block).
constexpr size_t kGradNormDoubles = 1 + 256;

}  // namespace snn
