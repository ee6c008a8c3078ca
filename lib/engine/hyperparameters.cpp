// Optimiser hyperparameters: kinds, ranges and the shared check.
#include "engine/hyperparameters.h"

#include <cfloat>
#include <cmath>

#include "common/error.h"
#include "core/optimisers.h"

namespace snn {

const Hyperparameter kHyperparameters[10] = {
    {SNN_HP_LEARNING_RATE, "learning_rate", "learning rate", &Optimiser::lr, false, false},
    {SNN_HP_MOMENTUM, "momentum", "momentum", &Optimiser::momentum, false, false},
    {SNN_HP_DAMPENING, "dampening", "dampening", &Optimiser::dampening, true, false},
    {SNN_HP_NESTEROV, "nesterov", "nesterov", &Optimiser::nesterov, false, false},
    {SNN_HP_BETA1, "beta1", "beta1", &Optimiser::beta1, false, false},
    {SNN_HP_BETA2, "beta2", "beta2", &Optimiser::beta2, false, false},
    {SNN_HP_EPSILON, "epsilon", "epsilon", &Optimiser::eps, false, false},
    {SNN_HP_WEIGHT_DECAY, "weight_decay", "weight decay", &Optimiser::weight_decay, false, false},
    {SNN_HP_ALPHA, "alpha", "alpha", &Optimiser::alpha, false, false},
    {SNN_HP_MAX_GRAD_NORM, "max_grad_norm", "max grad norm", &Optimiser::max_grad_norm, true, true},
};

namespace {

const Hyperparameter &find(snn_hyperparameter id) {
    for (const Hyperparameter &h : kHyperparameters)
        if (h.id == id) return h;
    fail(SNN_ERR_INVALID_ARGUMENT, "unknown hyperparameter %d", id);
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
    for (const Hyperparameter &h : kHyperparameters)
        if (h.id == id && h.every_kind) return true;
    for (const HyperparameterDefault &h : optimiser_desc(kind).hyperparameters)
        if (h.id == id && id != 0) return true;
    return false;
}

const char *optimiser_kind_name(OptKind kind) { return optimiser_desc(kind).name; }

void set_default_hyperparameters(Optimiser &o) {
    for (const HyperparameterDefault &h : optimiser_desc(o.kind).hyperparameters)
        if (h.id != 0) o.*find(h.id).field = h.value;
}

double get_hyperparameter(const Optimiser &o, snn_hyperparameter id) {
    return o.*applicable(id, o.kind).field;
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
        case SNN_HP_MAX_GRAD_NORM:
            check_range(h, value, 0.0, FLT_MAX, false, float32);
            break;
        case SNN_HP_EPSILON:
            check_range(h, value, FLT_MIN, FLT_MAX, false,
                        " (a normal float32: the updates run in float32 and flush subnormals to zero)");
            break;
        case SNN_HP_MOMENTUM:
            check_range(h, value, 0.0, 1.0, true, "");
            if (value == 0.0 && o.nesterov)
                fail(SNN_ERR_INVALID_ARGUMENT, "Nesterov momentum needs momentum > 0 (turn Nesterov off first)");
            break;
        case SNN_HP_DAMPENING:
            check_range(h, value, 0.0, 1.0, false, "");
            if (value != 0.0 && o.nesterov != 0.0)
                fail(SNN_ERR_INVALID_ARGUMENT,
                     "Nesterov momentum needs dampening 0, got %g (turn Nesterov off first)", value);
            break;
        case SNN_HP_NESTEROV:
            if (value != 0.0 && value != 1.0)
                fail(SNN_ERR_INVALID_ARGUMENT, "nesterov must be 0 or 1, got %g", value);
            if (value == 1.0 && o.momentum == 0.0)
                fail(SNN_ERR_INVALID_ARGUMENT, "Nesterov momentum needs momentum > 0 (set SNN_HP_MOMENTUM first)");
            if (value == 1.0 && o.dampening != 0.0)
                fail(SNN_ERR_INVALID_ARGUMENT,
                     "Nesterov momentum needs dampening 0, but it is %g (set SNN_HP_DAMPENING to 0 first)",
                     o.dampening);
            break;
        default:  // beta1, beta2, alpha
            check_range(h, value, 0.0, 1.0, true, "");
            break;
    }
    o.*h.field = value;
}

}  // namespace snn
