// Optimiser hyperparameters: which kinds have each, the range each must lie
// in, and the one check that snn_optimiser_set and checkpoint loading share,
// so a checkpoint holds only settings snn_optimiser_set would accept.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "engine/network.h"
#include "snn.h"

namespace snn {

// The most steps an optimiser counts: 2^53, the largest count a double (in
// which the bias correction 1 - beta^t is computed) holds exactly.
// snn_optimiser_step refuses to step past it and a checkpoint may not claim
// more, so the step count t + 1 never overflows.
constexpr int64_t kMaxOptimiserSteps = int64_t(1) << 53;

struct Hyperparameter {
    snn_hyperparameter id;
    const char *key;    // in checkpoints: metadata "optimiser.<key>"
    const char *label;  // in messages
    double Optimiser::*field;
    // Added after checkpoints were first written: a checkpoint without its
    // key loads with the default.
    bool may_be_absent;
    // Every kind has it (not listed in the descriptors; its default is the
    // field's initial value in Optimiser).
    bool every_kind;
};

// Every hyperparameter, in the order checkpoints apply them: the learning
// rate before the weight decay and the momentum before Nesterov, whose
// checks involve the one set earlier.
extern const Hyperparameter kHyperparameters[10];

// Whether the kind has the hyperparameter: every kind has it, or its
// descriptor lists it (core/optimisers.h).
bool hyperparameter_applies(snn_hyperparameter id, OptKind kind);
const char *optimiser_kind_name(OptKind kind);  // the descriptor's name: "SGD", "AdamW", ...

// Sets every hyperparameter of o's kind to the kind's default.
void set_default_hyperparameters(Optimiser &o);

// The current value. Throws SNN_ERR_INVALID_ARGUMENT for an unknown id or
// one the optimiser's kind lacks.
double get_hyperparameter(const Optimiser &o, snn_hyperparameter id);

// Checks value, then sets it; o is unchanged on error. Throws
// SNN_ERR_INVALID_ARGUMENT for an unknown id, one the kind lacks, or a value
// outside its range (see SNN_HP_* in include/snn.h):
//   learning rate, weight decay   [0, FLT_MAX], and their product <= FLT_MAX
//   epsilon                       [FLT_MIN, FLT_MAX] (a normal float32: the
//                                 updates flush subnormals to zero)
//   momentum, beta1, beta2, alpha [0, 1) as doubles (1 - beta is computed in
//                                 double, so a beta that rounds to 1.0f works)
//   dampening                     [0, 1]
//   max_grad_norm                 [0, FLT_MAX], 0 = no clipping
//   nesterov                      0 or 1, and 1 needs momentum > 0 and
//                                 dampening 0
// The float32 limits hold because the updates run in float32: a larger
// value would become infinite (or epsilon 0) there.
void set_hyperparameter(Optimiser &o, snn_hyperparameter id, double value);

}  // namespace snn
