// The descriptors of the losses (core/losses.h), one per line of
// SNN_LOSS_LIST.
#include "core/losses.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

#include <string>

#include "common/error.h"

namespace snn {

namespace {

constexpr LossParam kNoParam = {nullptr, 0.0, 0.0, 0.0, false};

const LossDesc loss_mse = {LossKind::mse, SNN_LOSS_MSE, "SNN_LOSS_MSE", "mean squared error",
                           LossInput::targets, kNoParam};

const LossDesc loss_logit_crossentropy = {LossKind::logit_crossentropy, SNN_LOSS_LOGIT_CROSSENTROPY,
                                          "SNN_LOSS_LOGIT_CROSSENTROPY", "cross-entropy",
                                          LossInput::labels, kNoParam};

const LossDesc loss_huber = {LossKind::huber, SNN_LOSS_HUBER, "SNN_LOSS_HUBER", "Huber",
                             LossInput::targets, {"delta", 1.0, 0.0, FLT_MAX, false}};

const LossDesc loss_smooth_l1 = {LossKind::smooth_l1, SNN_LOSS_SMOOTH_L1, "SNN_LOSS_SMOOTH_L1", "smooth L1",
                                 LossInput::targets, {"beta", 1.0, 0.0, FLT_MAX, true}};

const LossDesc loss_bce_with_logits = {LossKind::bce_with_logits, SNN_LOSS_BCE_WITH_LOGITS,
                                       "SNN_LOSS_BCE_WITH_LOGITS", "binary cross-entropy",
                                       LossInput::targets, kNoParam};

const LossDesc *const kLosses[] = {
#define SNN_LOSS_ENTRY(name, id) &loss_##name,
    SNN_LOSS_LIST(SNN_LOSS_ENTRY)
#undef SNN_LOSS_ENTRY
};

static_assert(sizeof(kLosses) / sizeof(kLosses[0]) == kLossCount, "one descriptor per loss");

}  // namespace

const LossDesc &loss_desc(LossKind kind) { return *kLosses[size_t(kind)]; }

const LossDesc *find_loss(int32_t id) {
    for (const LossDesc *d : kLosses)
        if (d->id == id) return d;
    return nullptr;
}

const LossDesc &loss_of(int32_t id) {
    if (const LossDesc *d = find_loss(id)) return *d;
    std::string known;
    for (const LossDesc *d : kLosses) known += std::string(known.empty() ? "" : ", ") + d->constant;
    fail(SNN_ERR_INVALID_ARGUMENT, "unknown loss %d (expected one of %s)", id, known.c_str());
}

const LossParam &loss_param(const LossDesc &d) {
    if (!d.param.name) fail(SNN_ERR_INVALID_ARGUMENT, "the %s loss (%s) has no parameter", d.name, d.constant);
    return d.param;
}

void check_loss_param(const LossDesc &d, double value) {
    const LossParam &p = loss_param(d);
    // Above an exclusive minimum as a double and as the float a kernel gets.
    const bool above_min = p.min_inclusive ? value >= p.min : value > p.min && double(float(value)) > p.min;
    if (!isfinite(value) || !above_min || value > p.max) {
        // A value above the minimum that rounds onto it as a float32 (Huber's
        // delta 1e-300 is 0 there): the message says so.
        char rounded[64] = "";
        if (value > p.min && !above_min)
            snprintf(rounded, sizeof(rounded), ", which is %g as a float32", double(float(value)));
        fail(SNN_ERR_INVALID_ARGUMENT, "%s of the %s loss must be in %c%g, %g] as a float32, got %g%s", p.name,
             d.name, p.min_inclusive ? '[' : '(', p.min, p.max, value, rounded);
    }
}

}  // namespace snn
