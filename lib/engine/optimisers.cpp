// The descriptors of the optimisers (core/optimisers.h), one per line of
// SNN_OPTIMISER_LIST, with PyTorch's defaults.
#include "core/optimisers.h"

#include <cstring>
#include <string>

#include "common/error.h"

namespace snn {

namespace {

const OptimiserDesc optimiser_sgd = {
    OptKind::sgd, SNN_OPTIMISER_SGD, "SNN_OPTIMISER_SGD", "SGD", "sgd",
    {{SNN_HP_LEARNING_RATE, 0.01}, {SNN_HP_MOMENTUM, 0.0}, {SNN_HP_DAMPENING, 0.0},
     {SNN_HP_NESTEROV, 0.0}, {SNN_HP_WEIGHT_DECAY, 0.0}},
    true, false};

const OptimiserDesc optimiser_adam = {
    OptKind::adam, SNN_OPTIMISER_ADAM, "SNN_OPTIMISER_ADAM", "Adam", "adam",
    {{SNN_HP_LEARNING_RATE, 1e-3}, {SNN_HP_BETA1, 0.9}, {SNN_HP_BETA2, 0.999},
     {SNN_HP_EPSILON, 1e-8}, {SNN_HP_WEIGHT_DECAY, 0.0}},
    true, true};

const OptimiserDesc optimiser_adamw = {
    OptKind::adamw, SNN_OPTIMISER_ADAMW, "SNN_OPTIMISER_ADAMW", "AdamW", "adamw",
    {{SNN_HP_LEARNING_RATE, 1e-3}, {SNN_HP_BETA1, 0.9}, {SNN_HP_BETA2, 0.999},
     {SNN_HP_EPSILON, 1e-8}, {SNN_HP_WEIGHT_DECAY, 0.01}},
    true, true};

const OptimiserDesc optimiser_rmsprop = {
    OptKind::rmsprop, SNN_OPTIMISER_RMSPROP, "SNN_OPTIMISER_RMSPROP", "RMSProp", "rmsprop",
    {{SNN_HP_LEARNING_RATE, 0.01}, {SNN_HP_ALPHA, 0.99}, {SNN_HP_EPSILON, 1e-8},
     {SNN_HP_WEIGHT_DECAY, 0.0}},
    false, true};

const OptimiserDesc optimiser_lion = {
    OptKind::lion, SNN_OPTIMISER_LION, "SNN_OPTIMISER_LION", "Lion", "lion",
    {{SNN_HP_LEARNING_RATE, 1e-4}, {SNN_HP_BETA1, 0.9}, {SNN_HP_BETA2, 0.99},
     {SNN_HP_WEIGHT_DECAY, 0.0}},
    true, false};

const OptimiserDesc *const kOptimisers[] = {
#define SNN_OPTIMISER_ENTRY(name, id) &optimiser_##name,
    SNN_OPTIMISER_LIST(SNN_OPTIMISER_ENTRY)
#undef SNN_OPTIMISER_ENTRY
};

static_assert(sizeof(kOptimisers) / sizeof(kOptimisers[0]) == kOptimiserCount,
              "one descriptor per optimiser");

std::string joined(const char *OptimiserDesc::*field) {
    std::string all;
    for (const OptimiserDesc *d : kOptimisers) all += std::string(all.empty() ? "" : ", ") + d->*field;
    return all;
}

}  // namespace

const OptimiserDesc &optimiser_desc(OptKind kind) { return *kOptimisers[size_t(kind)]; }

const OptimiserDesc *find_optimiser(int32_t id) {
    for (const OptimiserDesc *d : kOptimisers)
        if (d->id == id) return d;
    return nullptr;
}

const OptimiserDesc &optimiser_of(int32_t id) {
    if (const OptimiserDesc *d = find_optimiser(id)) return *d;
    fail(SNN_ERR_INVALID_ARGUMENT, "unknown optimiser kind %d (expected one of %s)", id,
         joined(&OptimiserDesc::constant).c_str());
}

const OptimiserDesc *find_optimiser_key(const char *key) {
    for (const OptimiserDesc *d : kOptimisers)
        if (std::strcmp(d->key, key) == 0) return d;
    return nullptr;
}

const char *optimiser_keys() {
    static const std::string keys = joined(&OptimiserDesc::key);
    return keys.c_str();
}

}  // namespace snn
