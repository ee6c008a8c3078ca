// Backward caches, targets and labels, backpropagation, optimisers.
#include <cmath>
#include <memory>

#include "api/guard.h"
#include "engine/hyperparameters.h"

using namespace snn;

namespace {

// Labels of n samples, `per` per sample (rows of `labels`, by index when
// indices is non-null): each in [0, classes), or -1 (a step to ignore) for
// a sequence output.
void check_labels(const int32_t *labels, const int64_t *indices, size_t n, size_t per, int64_t classes,
                  bool sequence) {
    for (size_t i = 0; i < n; ++i) {
        const int32_t *row = labels + (indices ? size_t(indices[i]) : i) * per;
        for (size_t t = 0; t < per; ++t) {
            const int32_t label = row[t];
            if (label >= 0 && label < classes) continue;
            if (sequence && label == -1) continue;
            if (sequence)
                fail(SNN_ERR_LABEL,
                     "label %d of sample %zu, step %zu is outside [0, %lld) (the model's outputs per step) and "
                     "is not -1 (ignore the step)",
                     label, i, t, (long long)classes);
            fail(SNN_ERR_LABEL, "label %d of sample %zu is outside [0, %lld) (the model's outputs)", label, i,
                 (long long)classes);
        }
    }
}

int64_t classes_of(const BackwardCache &b) { return b.net.output().row_size(); }
bool sequence_output(const BackwardCache &b) { return b.net.output().is_seq; }

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
    check_pass_intact(bwd->c, fwd->c, model->m);
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
        BackwardCache &b = cache->c;
        check_batch_buffer(targets, "targets", count, size_t(b.net.output().size()), b.max_batch);
        check_finite_host(targets, count, "targets");
        backward_set_targets(b, targets, count);
    });
}

SNN_API snn_status snn_set_labels(snn_backward_cache *cache, const int32_t *labels, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need_buffer(labels, "labels", n);
        BackwardCache &b = cache->c;
        const size_t per = labels_per_sample(b.net);
        if (n % per)
            fail(SNN_ERR_COUNT, "expected batch x %zu labels (one per step of the output sequence), got %zu", per,
                 n);
        check_batch_n(n / per, b.max_batch);
        check_labels(labels, nullptr, n / per, per, classes_of(b), sequence_output(b));
        backward_set_labels(b, labels, n / per);
    });
}

SNN_API snn_status snn_set_labels_gather(snn_backward_cache *cache, const int32_t *labels,
                                         size_t sample_count, const int64_t *indices, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need_buffer(labels, "labels", sample_count);
        need_buffer(indices, "indices", n);
        BackwardCache &b = cache->c;
        const size_t per = labels_per_sample(b.net);
        if (sample_count > SIZE_MAX / per)
            fail(SNN_ERR_INVALID_ARGUMENT, "sample_count %zu x %zu labels per sample is too large", sample_count, per);
        check_batch_n(n, b.max_batch);
        check_indices(indices, n, sample_count);
        check_labels(labels, indices, n, per, classes_of(b), sequence_output(b));
        backward_gather_labels(b, labels, indices, n);
    });
}

SNN_API snn_status snn_set_labels_from_dataset(snn_backward_cache *cache, const snn_dataset *dataset,
                                               const int64_t *indices, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(dataset, "dataset");
        need_buffer(indices, "indices", n);
        BackwardCache &b = cache->c;
        if (dataset->backend != b.backend)
            fail(SNN_ERR_DEVICE_MISMATCH, "the data set is on %s but the cache on %s",
                 device_name(dataset->backend->device()).c_str(), device_name(b.backend->device()).c_str());
        if (dataset->host_labels.empty()) fail(SNN_ERR_STATE, "the data set was created without labels");
        const size_t per = labels_per_sample(b.net);
        if (dataset->labels_per_sample != per)
            fail(SNN_ERR_COUNT, "the data set has %zu labels per sample, the model's output takes %zu",
                 dataset->labels_per_sample, per);
        check_batch_n(n, b.max_batch);
        check_indices(indices, n, dataset->count);
        check_labels(dataset->host_labels.data(), indices, n, per, classes_of(b), sequence_output(b));
        backward_gather_labels_device(b, dataset->stream.get(), dataset->labels.i32(), indices, n);
    });
}

SNN_API snn_status snn_set_input_gradient(snn_backward_cache *cache, int32_t enabled) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        if (enabled && cache->c.net.input().is_tokens)
            fail(SNN_ERR_UNSUPPORTED, "the model's inputs are token ids, which have no gradient");
        backward_set_input_gradient(cache->c, enabled != 0);
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
        if (!b.grads_finite && !b.scaler.found_inf) fail(SNN_ERR_NOT_FINITE, "the loss or a gradient is NaN or Inf");
        if (loss_value) *loss_value = value;
    });
}

SNN_API snn_status snn_backprop_with_output_gradient(snn_backward_cache *bwd,
                                                     snn_forward_cache *fwd,
                                                     const snn_model *model,
                                                     const float *output_gradient, size_t count) {
    return guarded(__func__, [&] {
        need_buffer(output_gradient, "output_gradient", count);
        check_backprop(bwd, fwd, model);
        check_buffer(output_gradient, "output_gradient", count,
                     batch_count(fwd->c.forward_batch, output_features(fwd->c)));
        check_finite_host(output_gradient, count, "output_gradient");
        backprop_output_grad(bwd->c, fwd->c, model->m, output_gradient);
        if (!bwd->c.grads_finite && !bwd->c.scaler.found_inf) fail(SNN_ERR_NOT_FINITE, "a gradient is NaN or Inf");
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
        check_buffer(dst, "dst", count, count_of(cache->c.net.param_count, "the parameter count"));
        backward_get_gradients(cache->c, dst);
    });
}

SNN_API snn_status snn_set_gradients(snn_backward_cache *cache, const float *src, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        check_buffer(src, "src", count, count_of(cache->c.net.param_count, "the parameter count"));
        check_finite_host(src, count, "src");
        backward_set_gradients(cache->c, src);
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
        need_buffer(dst, "dst", count);
        const BackwardCache &b = cache->c;
        input_gradient_count(b);
        check_buffer(dst, "dst", count, batch_count(b.input_grad_batch, size_t(b.net.input().size())));
        backward_get_input_gradients(b, dst);
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
        optimiser_checked_step(optimiser->o, model->m, grads->c);
    });
}

SNN_API snn_status snn_optimiser_reset(snn_optimiser *optimiser) {
    return guarded(__func__, [&] {
        need(optimiser, "optimiser");
        optimiser_reset(optimiser->o);
    });
}

SNN_API snn_status snn_optimiser_grad_norm(const snn_optimiser *optimiser, double *norm) {
    return guarded(__func__, [&] {
        need(optimiser, "optimiser");
        need(norm, "norm");
        *norm = optimiser_grad_norm(optimiser->o);
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
