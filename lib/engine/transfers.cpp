// Transfers between a caller's buffers and models or caches (see transfers.h).
#include "engine/transfers.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "engine/hyperparameters.h"

namespace snn {

std::string state_problem(const Network &net, const float *state, const char *what) {
    constexpr float kMaxCount = 16777216.0f;  // 2^24: floats count exactly up to here
    for (size_t i = 1; i < net.layers.size(); ++i)
        for (const TensorSlot &t : net.layers[i].tensors) {
            if (!t.state || !t.int64) continue;
            for (size_t k = t.offset; k < t.offset + t.count; ++k) {
                const float v = state[k];
                if (v >= 0.0f && v <= kMaxCount && v == std::floor(v) && !std::signbit(v)) continue;
                return format("%s[%zu] (layer %zu's %s) is %.9g; a count must be a whole number in "
                              "[0, 16777216] (2^24), and +0 rather than -0",
                              what, k, i, t.suffix.c_str(), double(v));
            }
        }
    return {};
}

// ---- data sets -------------------------------------------------------------------

void dataset_init(Dataset &d, Backend &be, const float *samples, size_t count, size_t features,
                  const int32_t *labels, size_t labels_per_sample) {
    d.backend = &be;
    d.count = count;
    d.features = features;
    d.labels_per_sample = labels_per_sample;
    d.stream = OwnedStream(be, 0, false);
    d.samples = DeviceBuffer(be, count * features * sizeof(float));
    be.upload(d.stream.get(), d.samples.get(), samples, count * features * sizeof(float));
    if (labels) {
        const size_t k = count * labels_per_sample;
        d.host_labels.assign(labels, labels + k);
        d.labels = DeviceBuffer(be, k * sizeof(int32_t));
        be.upload(d.stream.get(), d.labels.get(), labels, k * sizeof(int32_t));
    }
    be.synchronize(d.stream.get());
}

void dataset_init_tokens(Dataset &d, Backend &be, const int32_t *tokens, size_t count, size_t steps,
                         const int32_t *lengths, const int32_t *labels, size_t labels_per_sample) {
    std::vector<float> ids(tokens, tokens + count * steps);
    dataset_init(d, be, ids.data(), count, steps, labels, labels_per_sample);
    d.tokens = true;
    d.max_token = *std::max_element(tokens, tokens + count * steps);
    if (lengths) {
        d.lengths = DeviceBuffer(be, count * sizeof(int32_t));
        be.upload(d.stream.get(), d.lengths.get(), lengths, count * sizeof(int32_t));
        be.synchronize(d.stream.get());
        d.has_lengths = true;
    }
}

// ---- models ----------------------------------------------------------------------

void model_get_parameters(const Model &m, float *dst) {
    const size_t n = m.net.param_count;
    if (n) m.backend->download(m.stream.get(), dst, m.params.get(), n * sizeof(float));
}

void model_set_parameters(Model &m, const float *src, const char *by) {
    const size_t n = m.net.param_count;
    if (n == 0) return;
    model_write(m, m.params.get(), src, n * sizeof(float));
    m.param_writes.note(by);
}

void model_get_state(const Model &m, float *dst) {
    const size_t n = m.net.state_count;
    if (n) m.backend->download(m.stream.get(), dst, m.state.get(), n * sizeof(float));
}

void model_set_state(Model &m, const float *src, const char *by) {
    const size_t n = m.net.state_count;
    if (n == 0) return;
    const std::string problem = state_problem(m.net, src, "src");
    if (!problem.empty()) fail(SNN_ERR_INVALID_ARGUMENT, "%s", problem.c_str());
    model_write(m, m.state.get(), src, n * sizeof(float));
    m.state_writes.note(by);
}

// ---- forward caches --------------------------------------------------------------

size_t input_features(const ForwardCache &c) { return size_t(c.net.input().size()); }
size_t output_features(const ForwardCache &c) { return size_t(c.net.output().size()); }

void forward_set_batch(ForwardCache &c, int64_t batch) {
    if (batch < 1 || batch > c.max_batch)
        fail(SNN_ERR_BATCH, "batch %lld is outside [1, %lld] (the cache's max_batch)", (long long)batch,
             (long long)c.max_batch);
    if (batch != c.batch) c.input_batch = -1;
    c.batch = batch;
}

void forward_set_training(ForwardCache &c, bool training) { c.training = training; }

void forward_set_rng(ForwardCache &c, uint64_t seed, uint64_t passes) {
    c.seed = seed;
    c.passes = passes;
}

namespace {
// New inputs for n samples; the last pass's are gone (`by` wrote them).
void inputs_written(ForwardCache &c, int64_t n, const char *by) {
    c.batch = n;
    c.input_batch = n;
    c.has_lengths = false;
    c.pass.inputs_replaced_by = by;
}
}  // namespace

void forward_set_inputs(ForwardCache &c, const float *host, const char *by) {
    c.backend->upload(c.stream.get(), c.acts[0], host, size_t(c.batch) * input_features(c) * sizeof(float));
    inputs_written(c, c.batch, by);
}

void forward_set_inputs_device(ForwardCache &c, const float *device, const char *by) {
    c.backend->copy_from_caller(c.stream.get(), c.acts[0], device,
                                size_t(c.batch) * input_features(c) * sizeof(float));
    inputs_written(c, c.batch, by);
}

void forward_gather_inputs(ForwardCache &c, const float *host, const int64_t *indices, size_t n, const char *by) {
    c.backend->gather_upload(c.stream.get(), c.acts[0], host, indices, n, input_features(c) * sizeof(float));
    inputs_written(c, int64_t(n), by);
}

void forward_gather_inputs_device(ForwardCache &c, Stream *samples_stream, const float *samples,
                                  const int64_t *indices, size_t n, const char *by) {
    c.backend->wait(c.stream.get(), samples_stream);
    c.backend->gather_device(c.stream.get(), c.acts[0], samples, indices, n, input_features(c) * sizeof(float));
    inputs_written(c, int64_t(n), by);
}

void forward_set_tokens(ForwardCache &c, const int32_t *host, const char *by) {
    const size_t count = size_t(c.batch) * input_features(c);
    float *staging = c.token_staging.data();
    for (size_t i = 0; i < count; ++i) staging[i] = float(host[i]);
    c.backend->upload(c.stream.get(), c.acts[0], staging, count * sizeof(float));
    inputs_written(c, c.batch, by);
}

void forward_gather_tokens(ForwardCache &c, const int32_t *host, const int64_t *indices, size_t n, const char *by) {
    const size_t steps = input_features(c);
    float *staging = c.token_staging.data();
    for (size_t i = 0; i < n; ++i)
        for (size_t t = 0; t < steps; ++t) staging[i * steps + t] = float(host[size_t(indices[i]) * steps + t]);
    c.backend->upload(c.stream.get(), c.acts[0], staging, n * steps * sizeof(float));
    inputs_written(c, int64_t(n), by);
}

namespace {
void lengths_written(ForwardCache &c, const char *by) {
    c.has_lengths = true;
    c.pass.inputs_replaced_by = by;
}
}  // namespace

void forward_set_lengths(ForwardCache &c, const int32_t *host) {
    c.backend->upload(c.stream.get(), c.lengths.get(), host, size_t(c.input_batch) * sizeof(int32_t));
    lengths_written(c, "snn_set_lengths");
}

void forward_gather_lengths(ForwardCache &c, const int32_t *host, const int64_t *indices, size_t n) {
    c.backend->gather_upload(c.stream.get(), c.lengths.get(), host, indices, n, sizeof(int32_t));
    lengths_written(c, "snn_set_lengths_gather");
}

void forward_gather_lengths_device(ForwardCache &c, Stream *lengths_stream, const int32_t *lengths,
                                   const int64_t *indices, size_t n) {
    c.backend->wait(c.stream.get(), lengths_stream);
    c.backend->gather_device(c.stream.get(), c.lengths.get(), lengths, indices, n, sizeof(int32_t));
    lengths_written(c, "snn_set_inputs_from_dataset");
}

size_t forward_output_count(const ForwardCache &c) {
    if (c.forward_batch < 0) fail(SNN_ERR_STATE, "no forward pass yet");
    return size_t(c.forward_batch) * output_features(c);
}

void forward_get_outputs(const ForwardCache &c, float *dst) {
    c.backend->download(c.stream.get(), dst, c.acts.back(), forward_output_count(c) * sizeof(float));
}

// ---- backward caches -------------------------------------------------------------

void backward_set_targets(BackwardCache &b, const float *host, size_t count) {
    b.backend->upload(b.stream.get(), b.targets.get(), host, count * sizeof(float));
    b.targets_batch = int64_t(count / size_t(b.net.output().size()));
}

void backward_set_labels(BackwardCache &b, const int32_t *host, size_t n) {
    const size_t per = labels_per_sample(b.net);
    b.backend->upload(b.stream.get(), b.labels.get(), host, n * per * sizeof(int32_t));
    b.labels_batch = int64_t(n);
}

void backward_gather_labels(BackwardCache &b, const int32_t *host, const int64_t *indices, size_t n) {
    const size_t per = labels_per_sample(b.net);
    b.backend->gather_upload(b.stream.get(), b.labels.get(), host, indices, n, per * sizeof(int32_t));
    b.labels_batch = int64_t(n);
}

void backward_gather_labels_device(BackwardCache &b, Stream *labels_stream, const int32_t *labels,
                                   const int64_t *indices, size_t n) {
    const size_t per = labels_per_sample(b.net);
    b.backend->wait(b.stream.get(), labels_stream);
    b.backend->gather_device(b.stream.get(), b.labels.get(), labels, indices, n, per * sizeof(int32_t));
    b.labels_batch = int64_t(n);
}

void backward_set_input_gradient(BackwardCache &b, bool wanted) { b.want_input_grad = wanted; }

void check_pass_intact(const BackwardCache &b, const ForwardCache &f, const Model &m) {
    if (f.forward_batch < 0) fail(SNN_ERR_STATE, "the forward cache has no forward pass (call snn_forward first)");
    if (f.forward_batch > b.max_batch)
        fail(SNN_ERR_BATCH, "the forward batch %lld is above the backward cache's max_batch %lld",
             (long long)f.forward_batch, (long long)b.max_batch);
    if (f.forward_rewritten)
        fail(SNN_ERR_STATE,
             "the forward pass ran with inference rewrites (batchnorm folded into the layer before it), which "
             "backprop cannot differentiate (call snn_cache_set_inference_rewrites(cache, 0) and snn_forward "
             "again)");
    const ForwardCache::PassRecord &p = f.pass;
    if (p.inputs_replaced_by)
        fail(SNN_ERR_STATE, "%s replaced the inputs after the forward pass (call snn_forward again)",
             p.inputs_replaced_by);
    if (m.param_writes.count != p.param_writes)
        fail(SNN_ERR_STATE, "%s changed the parameters after the forward pass (call snn_forward again)",
             m.param_writes.by);
    if (!f.forward_training && m.state_writes.count != p.state_writes)
        fail(SNN_ERR_STATE,
             "%s changed the running statistics after the inference-mode forward pass (call snn_forward again)",
             m.state_writes.by);
}

void backward_get_gradients(const BackwardCache &b, float *dst) {
    const size_t n = b.net.param_count;
    if (n) b.backend->download(b.stream.get(), dst, b.grads.get(), n * sizeof(float));
}

void backward_set_gradients(BackwardCache &b, const float *src) {
    const size_t n = b.net.param_count;
    if (n) {
        b.backend->upload(b.stream.get(), b.grads.get(), src, n * sizeof(float));
        b.backend->synchronize(b.stream.get());
    }
    if (b.grads_batch < 0) b.grads_batch = 0;
    b.grads_finite = true;
    // With loss scaling, gradients set here (summed over data-parallel
    // ranks, say) decide the step in place of the last backprop's: its
    // scaler update is redone with their finiteness, so every rank that
    // sets the same sum skips or steps alike and keeps the same scale.
    LossScaler &sc = b.scaler;
    if (sc.enabled) {
        const bool finite = b.backend->all_finite(b.stream.get(), b.grads.f(), n);
        sc.scale = sc.scale_before;
        sc.good_steps = sc.good_steps_before;
        loss_scaler_update(sc, finite);
    }
}

size_t input_gradient_count(const BackwardCache &b) {
    if (b.input_grad_batch < 0)
        fail(SNN_ERR_STATE, "no input gradient: call snn_set_input_gradient(cache, 1) before snn_backprop");
    return size_t(b.input_grad_batch) * size_t(b.net.input().size());
}

void backward_get_input_gradients(const BackwardCache &b, float *dst) {
    b.backend->download(b.stream.get(), dst, b.input_grad.get(), input_gradient_count(b) * sizeof(float));
}

// ---- optimisers ------------------------------------------------------------------

void optimiser_checked_step(Optimiser &o, Model &m, const BackwardCache &b) {
    if (b.grads_batch < 0) fail(SNN_ERR_STATE, "the backward cache holds no gradient (call snn_backprop first)");
    // Loss scaling found an overflow: the step is skipped (GradScaler's rule).
    // Gradients changed in place since (snn_gradients_device) are checked
    // again: an overflow on another rank must not reach the parameters.
    if (b.scaler.enabled && b.scaler.found_inf) return;
    if (b.scaler.enabled && !b.backend->all_finite(b.stream.get(), b.grads.f(), b.net.param_count))
        fail(SNN_ERR_NOT_FINITE,
             "the gradient holds NaN or Inf though its snn_backprop found none (changed in place since? set summed "
             "gradients with snn_set_gradients, which decides the step with loss scaling); the parameters were left "
             "unchanged");
    if (!b.grads_finite) fail(SNN_ERR_NOT_FINITE, "the gradient holds NaN or Inf; the parameters were left unchanged");
    if (o.steps >= kMaxOptimiserSteps)
        fail(SNN_ERR_STATE, "the optimiser has counted 2^53 steps, the most it can (call snn_optimiser_reset)");
    optimiser_step(o, m, b);
    m.param_writes.note("snn_optimiser_step");
}

}  // namespace snn
