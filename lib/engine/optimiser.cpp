// Optimisers: state on the model's device, one fused update per step.
#include <cmath>

#include "common/error.h"
#include "engine/hyperparameters.h"
#include "engine/network.h"
#include "core/optimisers.h"

namespace snn {

void optimiser_init(Optimiser &o, const Model &model, OptKind kind) {
    Backend &be = *model.backend;
    o.model_id = model.id;
    o.placement = model.placement;
    o.backend = &be;
    o.kind = kind;
    o.count = model.net.param_count;
    set_default_hyperparameters(o);
    o.stream = OwnedStream(be, 0, false);
    const OptimiserDesc &d = optimiser_desc(kind);
    const size_t bytes = o.count * sizeof(float);
    if (d.has_m) o.m = DeviceBuffer(be, bytes);
    if (d.has_v) o.v = DeviceBuffer(be, bytes);
    o.norm = DeviceBuffer(be, kGradNormDoubles * sizeof(double));
    // Zero bits are 0.0 as doubles too. Written once, so that a move to
    // another device (optimiser_follow) copies defined memory even before a
    // clipping step wrote it.
    be.fill(o.stream.get(), o.norm.f(), 0.0f, kGradNormDoubles * sizeof(double) / sizeof(float));
    optimiser_reset(o);
}

void optimiser_reset(Optimiser &o) {
    if (o.m.get()) o.backend->fill(o.stream.get(), o.m.f(), 0.0f, o.count);
    if (o.v.get()) o.backend->fill(o.stream.get(), o.v.f(), 0.0f, o.count);
    o.backend->synchronize(o.stream.get());
    o.steps = 0;
    o.norm_written = false;
}

void optimiser_follow(Optimiser &o, const Model &model) {
    Backend &to = *model.backend;
    OwnedStream stream(to, 0, false);
    // A copy of a state buffer on `to` (none for a buffer the kind lacks).
    auto moved = [&](const DeviceBuffer &from) {
        DeviceBuffer copy;
        if (!from.get()) return copy;
        copy = DeviceBuffer(to, from.bytes());
        copy_across(*o.backend, o.stream.get(), from.get(), to, stream.get(), copy.get(), from.bytes());
        return copy;
    };
    DeviceBuffer m = moved(o.m), v = moved(o.v), norm = moved(o.norm);
    o.m = std::move(m);
    o.v = std::move(v);
    o.norm = std::move(norm);
    o.stream = std::move(stream);
    o.backend = &to;
    o.placement = model.placement;
}

void optimiser_step(Optimiser &o, Model &model, const BackwardCache &b) {
    const int64_t t = o.steps + 1;
    OptStep s;
    s.lr = float(o.lr);
    s.momentum = float(o.momentum);
    s.eps = float(o.eps);
    s.weight_decay = float(o.weight_decay);
    // Products and complements in double, then rounded once
    s.lr_weight_decay = float(o.lr * o.weight_decay);
    s.one_minus_beta1 = float(1.0 - o.beta1);
    s.one_minus_beta2 = float(1.0 - o.beta2);
    s.one_minus_alpha = float(1.0 - o.alpha);
    s.one_minus_dampening = float(1.0 - o.dampening);
    s.bias_correction1 = float(1.0 - std::pow(o.beta1, double(t)));
    s.bias_correction2 = float(1.0 - std::pow(o.beta2, double(t)));
    s.nesterov = o.nesterov != 0.0;
    s.first_step = o.steps == 0;
    s.max_grad_norm = o.max_grad_norm;
    const bool clip = o.max_grad_norm > 0.0;
    // The model's stream already waits for the passes queued on caches
    // (see Model); the step reads the gradient once backprop wrote it.
    Stream *st = model.stream.get();
    o.backend->wait(st, b.stream.get());
    o.backend->optimiser_step(st, o.kind, s, o.count, model.params_ptr(), b.grads.f(), o.m.f(), o.v.f(),
                              clip ? static_cast<double *>(o.norm.get()) : nullptr);
    o.backend->mark(st);
    // A later write of the gradient (backprop, snn_set_gradients) and a
    // reset of the moments come after the step read and wrote them.
    o.backend->wait_mark(b.stream.get(), st);
    o.backend->wait_mark(o.stream.get(), st);
    o.steps = t;
    o.norm_written = clip;
}

double optimiser_grad_norm(const Optimiser &o) {
    if (!o.norm_written)
        fail(SNN_ERR_STATE, o.steps == 0 ? "no step yet: the gradient norm is computed by steps that clip "
                                           "(SNN_HP_MAX_GRAD_NORM > 0)"
                                         : "the last step did not clip (SNN_HP_MAX_GRAD_NORM was 0), so it "
                                           "computed no gradient norm");
    double norm = 0.0;
    // The optimiser's stream waits for the last step (optimiser_step).
    o.backend->download(o.stream.get(), &norm, o.norm.get(), sizeof(double));
    return norm;
}

}  // namespace snn
