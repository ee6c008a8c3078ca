// Backward caches, targets and labels, backpropagation, optimisers.
#include <cmath>
#include <memory>

#include "api/guard.h"
#include "engine/hyperparameters.h"

using namespace snn;

namespace {

void check_labels(const int32_t *labels, const int64_t *indices, size_t n, int64_t classes) {
    for (size_t i = 0; i < n; ++i) {
        int32_t label = indices ? labels[indices[i]] : labels[i];
        if (label < 0 || label >= classes)
            fail(SNN_ERR_LABEL, "label %d of sample %zu is outside [0, %lld) (the model's outputs)",
                 label, i, (long long)classes);
    }
}

int64_t classes_of(const BackwardCache &b) { return b.net.output().size(); }

// Checks shared by both backprop entries.
void check_backprop(snn_backward_cache *bwd, snn_forward_cache *fwd, const snn_model *model) {
    need(bwd, "bwd");
    need(fwd, "fwd");
    need(model, "model");
    // Both belong to the model before either follows it to its device.
    check_model_id(fwd->c, model->m, "the forward cache");
    check_model_id(bwd->c, model->m, "the backward cache");
    check_model(fwd->c, model->m, "the forward cache");
    check_model(bwd->c, model->m, "the backward cache");
    if (fwd->c.forward_batch < 0)
        fail(SNN_ERR_STATE, "the forward cache has no forward pass (call snn_forward first)");
    if (fwd->c.forward_batch > bwd->c.max_batch)
        fail(SNN_ERR_BATCH, "the forward batch %lld is above the backward cache's max_batch %lld",
             (long long)fwd->c.forward_batch, (long long)bwd->c.max_batch);
    // Backprop differentiates the pass as it ran: what it read must be intact.
    const ForwardCache::PassRecord &p = fwd->c.pass;
    const Model &m = model->m;
    if (p.inputs_replaced_by)
        fail(SNN_ERR_STATE, "%s replaced the inputs after the forward pass (call snn_forward again)",
             p.inputs_replaced_by);
    if (m.param_writes.count != p.param_writes)
        fail(SNN_ERR_STATE, "%s changed the parameters after the forward pass (call snn_forward again)",
             m.param_writes.by);
    if (!fwd->c.forward_training && m.state_writes.count != p.state_writes)
        fail(SNN_ERR_STATE,
             "%s changed the running statistics after the inference-mode forward pass (call snn_forward again)",
             m.state_writes.by);
}

}  // namespace

extern "C" {

SNN_API snn_status snn_preallocate_grads(const snn_model *model, int64_t max_batch,
                                         snn_backward_cache **out) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(out, "out");
        check_max_batch(max_batch);
        ensure_threads_configured();
        auto cache = std::make_unique<snn_backward_cache>();
        backward_cache_init(cache->c, model->m, max_batch);
        *out = cache.release();
    });
}

SNN_API void snn_backward_cache_destroy(snn_backward_cache *cache) {
    DeviceScope device_scope;
    delete cache;
}

SNN_API snn_status snn_set_targets(snn_backward_cache *cache, const float *targets, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(targets, "targets");
        BackwardCache &b = cache->c;
        const size_t k = size_t(classes_of(b));
        if (count == 0 || count % k != 0 || count / k > size_t(b.max_batch))
            fail(SNN_ERR_COUNT, "expected a multiple of %zu floats (outputs) up to %zu (max_batch %lld), got %zu",
                 k, k * size_t(b.max_batch), (long long)b.max_batch, count);
        check_finite_host(targets, count, "targets");
        b.backend->upload(b.stream.get(), b.targets.get(), targets, count * sizeof(float));
        b.targets_batch = int64_t(count / k);
    });
}

SNN_API snn_status snn_set_labels(snn_backward_cache *cache, const int32_t *labels, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(labels, "labels");
        BackwardCache &b = cache->c;
        check_batch_n(n, b.max_batch);
        check_labels(labels, nullptr, n, classes_of(b));
        b.backend->upload(b.stream.get(), b.labels.get(), labels, n * sizeof(int32_t));
        b.labels_batch = int64_t(n);
    });
}

SNN_API snn_status snn_set_labels_gather(snn_backward_cache *cache, const int32_t *labels,
                                         size_t sample_count, const int64_t *indices, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(labels, "labels");
        need(indices, "indices");
        BackwardCache &b = cache->c;
        check_batch_n(n, b.max_batch);
        check_indices(indices, n, sample_count);
        check_labels(labels, indices, n, classes_of(b));
        b.backend->gather_upload(b.stream.get(), b.labels.get(), labels, indices, n, sizeof(int32_t));
        b.labels_batch = int64_t(n);
    });
}

SNN_API snn_status snn_set_labels_from_dataset(snn_backward_cache *cache, const snn_dataset *dataset,
                                               const int64_t *indices, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(dataset, "dataset");
        need(indices, "indices");
        BackwardCache &b = cache->c;
        if (dataset->backend != b.backend)
            fail(SNN_ERR_DEVICE_MISMATCH, "the data set is on %s but the cache on %s",
                 device_name(dataset->backend->device()).c_str(), device_name(b.backend->device()).c_str());
        if (dataset->host_labels.empty()) fail(SNN_ERR_STATE, "the data set was created without labels");
        check_batch_n(n, b.max_batch);
        check_indices(indices, n, dataset->count);
        check_labels(dataset->host_labels.data(), indices, n, classes_of(b));
        b.backend->wait(b.stream.get(), dataset->stream.get());
        b.backend->gather_device(b.stream.get(), b.labels.get(), dataset->labels.get(), indices, n,
                                 sizeof(int32_t));
        b.labels_batch = int64_t(n);
    });
}

SNN_API snn_status snn_set_input_gradient(snn_backward_cache *cache, int32_t enabled) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        cache->c.want_input_grad = enabled != 0;
    });
}

SNN_API snn_status snn_set_loss_parameter(snn_backward_cache *cache, snn_loss loss, double value) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        const LossDesc &d = loss_of(loss);
        check_loss_param(d, value);
        cache->c.loss_params[size_t(d.kind)] = value;
    });
}

SNN_API snn_status snn_get_loss_parameter(const snn_backward_cache *cache, snn_loss loss,
                                          double *value) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(value, "value");
        const LossDesc &d = loss_of(loss);
        loss_param(d);
        *value = cache->c.loss_params[size_t(d.kind)];
    });
}

SNN_API snn_status snn_backprop(snn_backward_cache *bwd, snn_forward_cache *fwd,
                                const snn_model *model, snn_loss loss, float *loss_value) {
    return guarded(__func__, [&] {
        check_backprop(bwd, fwd, model);
        BackwardCache &b = bwd->c;
        float value = 0.0f;
        backprop_loss(b, fwd->c, model->m, loss, loss_value ? &value : nullptr);
        if (!b.grads_finite) fail(SNN_ERR_NOT_FINITE, "the loss or a gradient is NaN or Inf");
        if (loss_value) *loss_value = value;
    });
}

SNN_API snn_status snn_backprop_with_output_gradient(snn_backward_cache *bwd,
                                                     snn_forward_cache *fwd,
                                                     const snn_model *model,
                                                     const float *output_gradient, size_t count) {
    return guarded(__func__, [&] {
        need(output_gradient, "output_gradient");
        check_backprop(bwd, fwd, model);
        const int64_t n = fwd->c.forward_batch;
        const size_t k = size_t(model->m.net.output().size());
        if (count != size_t(n) * k)
            fail(SNN_ERR_COUNT, "expected %zu floats (batch %lld x %zu), got %zu", size_t(n) * k,
                 (long long)n, k, count);
        check_finite_host(output_gradient, count, "output_gradient");
        backprop_output_grad(bwd->c, fwd->c, model->m, output_gradient);
        if (!bwd->c.grads_finite) fail(SNN_ERR_NOT_FINITE, "a gradient is NaN or Inf");
    });
}

SNN_API snn_status snn_gradients(const snn_backward_cache *cache, const float **data, size_t *count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(data, "data");
        need(count, "count");
        const BackwardCache &b = cache->c;
        if (b.backend->device() != SNN_DEVICE_CPU)
            fail(SNN_ERR_DEVICE_MISMATCH, "the cache is on GPU %d; use snn_get_gradients to copy",
                 b.backend->device());
        *data = b.grads.f();
        *count = b.net.param_count;
    });
}

SNN_API snn_status snn_get_gradients(const snn_backward_cache *cache, float *dst, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(dst, "dst");
        const BackwardCache &b = cache->c;
        const size_t expected = b.net.param_count;
        if (count != expected)
            fail(SNN_ERR_COUNT, "expected %zu floats (the parameter count), got %zu", expected, count);
        b.backend->download(b.stream.get(), dst, b.grads.get(), count * sizeof(float));
    });
}

SNN_API snn_status snn_set_gradients(snn_backward_cache *cache, const float *src, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(src, "src");
        BackwardCache &b = cache->c;
        const size_t expected = b.net.param_count;
        if (count != expected)
            fail(SNN_ERR_COUNT, "expected %zu floats (the parameter count), got %zu", expected, count);
        check_finite_host(src, count, "src");
        b.backend->upload(b.stream.get(), b.grads.get(), src, count * sizeof(float));
        b.backend->synchronize(b.stream.get());
        if (b.grads_batch < 0) b.grads_batch = 0;
        b.grads_finite = true;
    });
}

SNN_API snn_status snn_gradients_device(snn_backward_cache *cache, float **data, size_t *count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(data, "data");
        need(count, "count");
        const BackwardCache &b = cache->c;
        if (b.backend->device() == SNN_DEVICE_CPU)
            fail(SNN_ERR_DEVICE_MISMATCH, "the cache is on the CPU; use snn_gradients there");
        *data = b.grads.f();
        *count = b.net.param_count;
    });
}

SNN_API snn_status snn_backward_cache_synchronize(snn_backward_cache *cache) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        BackwardCache &b = cache->c;
        b.backend->synchronize(b.stream.get());
    });
}

SNN_API snn_status snn_get_input_gradients(const snn_backward_cache *cache, float *dst, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(dst, "dst");
        const BackwardCache &b = cache->c;
        if (b.input_grad_batch < 0)
            fail(SNN_ERR_STATE, "no input gradient: call snn_set_input_gradient(cache, 1) before snn_backprop");
        const size_t features = size_t(b.net.input().size());
        const size_t expected = size_t(b.input_grad_batch) * features;
        if (count != expected)
            fail(SNN_ERR_COUNT, "expected %zu floats (batch %lld x %zu), got %zu", expected,
                 (long long)b.input_grad_batch, features, count);
        b.backend->download(b.stream.get(), dst, b.input_grad.get(), count * sizeof(float));
    });
}

// ---- optimisers ------------------------------------------------------------------

SNN_API snn_status snn_optimiser_create(const snn_model *model, snn_optimiser_kind kind,
                                        snn_optimiser **out) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(out, "out");
        const OptimiserDesc &d = optimiser_of(kind);
        auto opt = std::make_unique<snn_optimiser>();
        optimiser_init(opt->o, model->m, d.kind);
        *out = opt.release();
    });
}

SNN_API void snn_optimiser_destroy(snn_optimiser *optimiser) {
    DeviceScope device_scope;
    delete optimiser;
}

SNN_API snn_status snn_optimiser_set(snn_optimiser *optimiser, snn_hyperparameter which, double value) {
    return guarded(__func__, [&] {
        need(optimiser, "optimiser");
        set_hyperparameter(optimiser->o, which, value);
    });
}

SNN_API snn_status snn_optimiser_get(const snn_optimiser *optimiser, snn_hyperparameter which,
                                     double *value) {
    return guarded(__func__, [&] {
        need(optimiser, "optimiser");
        need(value, "value");
        *value = get_hyperparameter(optimiser->o, which);
    });
}

SNN_API snn_status snn_optimiser_step(snn_optimiser *optimiser, snn_model *model,
                                      const snn_backward_cache *grads) {
    return guarded(__func__, [&] {
        need(optimiser, "optimiser");
        need(model, "model");
        need(grads, "grads");
        check_model_id(grads->c, model->m, "the backward cache");
        check_model(optimiser->o, model->m, "the optimiser");
        // Following the model to its device moves the gradient without
        // changing it: the cache is const to the caller, not to the library
        // that made it.
        check_model(const_cast<BackwardCache &>(grads->c), model->m, "the backward cache");
        if (grads->c.grads_batch < 0) fail(SNN_ERR_STATE, "the backward cache holds no gradient (call snn_backprop first)");
        if (!grads->c.grads_finite)
            fail(SNN_ERR_NOT_FINITE, "the gradient holds NaN or Inf; the parameters were left unchanged");
        if (optimiser->o.steps >= kMaxOptimiserSteps)
            fail(SNN_ERR_STATE, "the optimiser has counted 2^53 steps, the most it can (call snn_optimiser_reset)");
        optimiser_step(optimiser->o, model->m, grads->c);
        model->m.param_writes.note("snn_optimiser_step");
    });
}

SNN_API snn_status snn_optimiser_reset(snn_optimiser *optimiser) {
    return guarded(__func__, [&] {
        need(optimiser, "optimiser");
        optimiser_reset(optimiser->o);
    });
}

SNN_API snn_status snn_optimiser_step_count(const snn_optimiser *optimiser, int64_t *steps) {
    return guarded(__func__, [&] {
        need(optimiser, "optimiser");
        need(steps, "steps");
        *steps = optimiser->o.steps;
    });
}

}  // extern "C"
