// Optimiser hyperparameters: kinds, ranges and the shared check.
#include "engine/hyperparameters.h"

#include <cfloat>
#include <cmath>

#include "common/error.h"

namespace snn {

const Hyperparameter kHyperparameters[8] = {
    {SNN_HP_LEARNING_RATE, "learning_rate", "learning rate"},
    {SNN_HP_MOMENTUM, "momentum", "momentum"},
    {SNN_HP_NESTEROV, "nesterov", "nesterov"},
    {SNN_HP_BETA1, "beta1", "beta1"},
    {SNN_HP_BETA2, "beta2", "beta2"},
    {SNN_HP_EPSILON, "epsilon", "epsilon"},
    {SNN_HP_WEIGHT_DECAY, "weight_decay", "weight decay"},
    {SNN_HP_ALPHA, "alpha", "alpha"},
};

namespace {

const Hyperparameter &find(snn_hyperparameter id) {
    for (const Hyperparameter &h : kHyperparameters)
        if (h.id == id) return h;
    fail(SNN_ERR_INVALID_ARGUMENT, "unknown hyperparameter %d", id);
}

// Where a hyperparameter held as a double lives; nesterov is a flag.
double Optimiser::*field(snn_hyperparameter id) {
    switch (id) {
        case SNN_HP_LEARNING_RATE: return &Optimiser::lr;
        case SNN_HP_MOMENTUM: return &Optimiser::momentum;
        case SNN_HP_BETA1: return &Optimiser::beta1;
        case SNN_HP_BETA2: return &Optimiser::beta2;
        case SNN_HP_EPSILON: return &Optimiser::eps;
        case SNN_HP_WEIGHT_DECAY: return &Optimiser::weight_decay;
        case SNN_HP_ALPHA: return &Optimiser::alpha;
        default: return nullptr;
    }
}

const Hyperparameter &applicable(snn_hyperparameter id, OptKind kind) {
    const Hyperparameter &h = find(id);
    if (!hyperparameter_applies(id, kind))
        fail(SNN_ERR_INVALID_ARGUMENT, "%s does not apply to %s", h.label, optimiser_kind_name(kind));
    return h;
}

// value in [lo, hi] (or [lo, hi) with hi_open); NaN is outside every range.
void check_range(const Hyperparameter &h, double value, double lo, double hi, bool hi_open, const char *why) {
    const bool inside = value >= lo && (hi_open ? value < hi : value <= hi);
    if (!inside)
        fail(SNN_ERR_INVALID_ARGUMENT, "%s must be in [%.9g, %.9g%s%s, got %.9g", h.label, lo, hi,
             hi_open ? ")" : "]", why, value);
}

}  // namespace

bool hyperparameter_applies(snn_hyperparameter id, OptKind kind) {
    const bool sgd = kind == OptKind::sgd, adam = kind == OptKind::adam || kind == OptKind::adamw;
    switch (id) {
        case SNN_HP_LEARNING_RATE:
        case SNN_HP_WEIGHT_DECAY: return true;
        case SNN_HP_MOMENTUM:
        case SNN_HP_NESTEROV: return sgd;
        case SNN_HP_BETA1:
        case SNN_HP_BETA2: return adam;
        case SNN_HP_EPSILON: return !sgd;
        case SNN_HP_ALPHA: return kind == OptKind::rmsprop;
        default: return false;
    }
}

const char *optimiser_kind_name(OptKind kind) {
    switch (kind) {
        case OptKind::sgd: return "SGD";
        case OptKind::adam: return "Adam";
        case OptKind::adamw: return "AdamW";
        default: return "RMSProp";
    }
}

double get_hyperparameter(const Optimiser &o, snn_hyperparameter id) {
    applicable(id, o.kind);
    if (id == SNN_HP_NESTEROV) return o.nesterov ? 1.0 : 0.0;
    return o.*field(id);
}

void set_hyperparameter(Optimiser &o, snn_hyperparameter id, double value) {
    const Hyperparameter &h = applicable(id, o.kind);
    if (std::isinf(value)) fail(SNN_ERR_INVALID_ARGUMENT, "%s must be finite, got %g", h.label, value);
    const char *float32 = " (finite in float32, in which the updates run)";
    switch (id) {
        case SNN_HP_LEARNING_RATE:
        case SNN_HP_WEIGHT_DECAY: {
            check_range(h, value, 0.0, FLT_MAX, false, float32);
            // AdamW decays by lr * weight_decay in one float32 factor.
            const double other = id == SNN_HP_LEARNING_RATE ? o.weight_decay : o.lr;
            if (value * other > FLT_MAX)
                fail(SNN_ERR_INVALID_ARGUMENT,
                     "%s %g times %s %g is above the largest float32 (%.9g)", h.label, value,
                     id == SNN_HP_LEARNING_RATE ? "weight decay" : "learning rate", other, double(FLT_MAX));
            break;
        }
        case SNN_HP_EPSILON:
            check_range(h, value, FLT_MIN, FLT_MAX, false,
                        " (a normal float32: the updates run in float32 and flush subnormals to zero)");
            break;
        case SNN_HP_MOMENTUM:
            check_range(h, value, 0.0, 1.0, true, "");
            if (value == 0.0 && o.nesterov)
                fail(SNN_ERR_INVALID_ARGUMENT, "Nesterov momentum needs momentum > 0 (turn Nesterov off first)");
            break;
        case SNN_HP_NESTEROV:
            if (value != 0.0 && value != 1.0)
                fail(SNN_ERR_INVALID_ARGUMENT, "nesterov must be 0 or 1, got %g", value);
            if (value == 1.0 && o.momentum == 0.0)
                fail(SNN_ERR_INVALID_ARGUMENT, "Nesterov momentum needs momentum > 0 (set SNN_HP_MOMENTUM first)");
            o.nesterov = value == 1.0;
            return;
        default:  // beta1, beta2, alpha
            check_range(h, value, 0.0, 1.0, true, "");
            break;
    }
    o.*field(id) = value;
}

}  // namespace snn
