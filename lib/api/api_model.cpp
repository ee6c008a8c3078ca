// Models, forward caches, inputs and outputs, data sets.
#include <cmath>
#include <cstring>
#include <memory>

#include "api/guard.h"
#include "device/devices.h"

using namespace snn;

namespace {

const Layer &layer_at(const snn_model *model, int64_t layer) {
    const auto &layers = model->m.net.layers;
    if (layer < 0 || layer >= int64_t(layers.size()))
        fail(SNN_ERR_INVALID_ARGUMENT, "layer %lld is out of range [0, %zu)", (long long)layer,
             layers.size());
    return layers[size_t(layer)];
}

size_t features_of(const ForwardCache &c) { return size_t(c.net.input().size()); }

// New inputs for the current batch; the last pass's are gone (`by` wrote them).
void inputs_written(ForwardCache &c, const char *by) {
    c.input_batch = c.batch;
    c.pass.inputs_replaced_by = by;
}

// Notes what the pass just run read, after its own write of the state
// (training mode), so backprop can tell whether it is still the pass that ran.
void record_pass(ForwardCache &c, const Model &m) {
    if (c.forward_training && m.net.state_count) m.state_writes.note("snn_forward (training mode) of another cache");
    c.pass = {m.param_writes.count, m.state_writes.count, nullptr};
}

}  // namespace

extern "C" {

SNN_API snn_status snn_model_create(const char *spec, snn_model **out) {
    return guarded(__func__, [&] {
        need(spec, "spec");
        need(out, "out");
        ensure_threads_configured();
        auto model = std::make_unique<snn_model>();
        model_init_on_cpu(model->m, parse_spec(spec), 0);
        *out = model.release();
    });
}

SNN_API void snn_model_destroy(snn_model *model) {
    DeviceScope device_scope;
    delete model;
}

SNN_API snn_status snn_model_describe(const snn_model *model, char *buf, size_t capacity,
                                      size_t *length) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(length, "length");
        std::string s = describe(model->m.net);
        if (buf != nullptr || capacity != 0) {
            need(buf, "buf");
            if (capacity <= s.size())
                fail(SNN_ERR_COUNT, "capacity %zu is too small for %zu characters and the NUL",
                     capacity, s.size());
            std::memcpy(buf, s.c_str(), s.size() + 1);
        }
        *length = s.size();
    });
}

SNN_API snn_status snn_model_layer_count(const snn_model *model, int64_t *count) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(count, "count");
        *count = int64_t(model->m.net.layers.size());
    });
}

SNN_API snn_status snn_model_layer_shape(const snn_model *model, int64_t layer, int64_t *channels,
                                         int64_t *height, int64_t *width) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(channels, "channels");
        need(height, "height");
        need(width, "width");
        const Layer &l = layer_at(model, layer);
        *channels = l.out.c;
        *height = l.out.h;
        *width = l.out.w;
    });
}

SNN_API snn_status snn_model_layer_params(const snn_model *model, int64_t layer,
                                          size_t *weight_offset, size_t *weight_count,
                                          size_t *bias_offset, size_t *bias_count) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(weight_offset, "weight_offset");
        need(weight_count, "weight_count");
        need(bias_offset, "bias_offset");
        need(bias_count, "bias_count");
        const Layer &l = layer_at(model, layer);
        *weight_offset = l.weight_offset;
        *weight_count = l.weight_count;
        *bias_offset = l.bias_offset;
        *bias_count = l.bias_count;
    });
}

SNN_API snn_status snn_model_input_size(const snn_model *model, size_t *features) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(features, "features");
        *features = size_t(model->m.net.input().size());
    });
}

SNN_API snn_status snn_model_output_size(const snn_model *model, size_t *outputs) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(outputs, "outputs");
        *outputs = size_t(model->m.net.output().size());
    });
}

SNN_API snn_status snn_parameter_count(const snn_model *model, size_t *count) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(count, "count");
        *count = model->m.net.param_count;
    });
}

SNN_API snn_status snn_model_init(snn_model *model, uint64_t seed) {
    return guarded(__func__, [&] {
        need(model, "model");
        model_reinit(model->m, seed);
        model->m.param_writes.note("snn_model_init");
        model->m.state_writes.note("snn_model_init");
    });
}

SNN_API snn_status snn_parameters(snn_model *model, float **data, size_t *count) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(data, "data");
        need(count, "count");
        if (model->m.device() != SNN_DEVICE_CPU)
            fail(SNN_ERR_DEVICE_MISMATCH,
                 "the model is on GPU %d; use snn_get_parameters/snn_set_parameters to copy",
                 model->m.device());
        *data = model->m.params_ptr();
        *count = model->m.net.param_count;
    });
}

SNN_API snn_status snn_get_parameters(const snn_model *model, float *dst, size_t count) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(dst, "dst");
        const Model &m = model->m;
        if (count != m.net.param_count)
            fail(SNN_ERR_COUNT, "expected %zu floats (the parameter count), got %zu", m.net.param_count, count);
        m.backend->download(m.stream.get(), dst, m.params.get(), count * sizeof(float));
    });
}

SNN_API snn_status snn_set_parameters(snn_model *model, const float *src, size_t count) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(src, "src");
        Model &m = model->m;
        if (count != m.net.param_count)
            fail(SNN_ERR_COUNT, "expected %zu floats (the parameter count), got %zu", m.net.param_count, count);
        model_write(m, m.params.get(), src, count * sizeof(float));
        m.param_writes.note("snn_set_parameters");
    });
}

SNN_API snn_status snn_state_count(const snn_model *model, size_t *count) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(count, "count");
        *count = model->m.net.state_count;
    });
}

SNN_API snn_status snn_get_state(const snn_model *model, float *dst, size_t count) {
    return guarded(__func__, [&] {
        need(model, "model");
        const Model &m = model->m;
        if (count != m.net.state_count)
            fail(SNN_ERR_COUNT, "expected %zu floats (the state count), got %zu", m.net.state_count, count);
        if (count == 0) return;
        need(dst, "dst");
        m.backend->download(m.stream.get(), dst, m.state.get(), count * sizeof(float));
    });
}

SNN_API snn_status snn_set_state(snn_model *model, const float *src, size_t count) {
    return guarded(__func__, [&] {
        need(model, "model");
        Model &m = model->m;
        if (count != m.net.state_count)
            fail(SNN_ERR_COUNT, "expected %zu floats (the state count), got %zu", m.net.state_count, count);
        if (count == 0) return;
        need(src, "src");
        const std::string problem = state_problem(m.net, src, "src");
        if (!problem.empty()) fail(SNN_ERR_INVALID_ARGUMENT, "%s", problem.c_str());
        model_write(m, m.state.get(), src, count * sizeof(float));
        m.state_writes.note("snn_set_state");
    });
}

SNN_API snn_status snn_model_layer_state(const snn_model *model, int64_t layer, size_t *offset, size_t *count) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(offset, "offset");
        need(count, "count");
        const Layer &l = layer_at(model, layer);
        *offset = l.state_offset;
        *count = l.state_count;
    });
}

// ---- forward caches ------------------------------------------------------------

SNN_API snn_status snn_preallocate(const snn_model *model, int64_t max_batch,
                                   snn_forward_cache **out) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(out, "out");
        check_max_batch(max_batch);
        ensure_threads_configured();
        auto cache = std::make_unique<snn_forward_cache>();
        forward_cache_init(cache->c, model->m, max_batch);
        *out = cache.release();
    });
}

SNN_API void snn_forward_cache_destroy(snn_forward_cache *cache) {
    DeviceScope device_scope;
    delete cache;
}

SNN_API snn_status snn_cache_set_batch(snn_forward_cache *cache, int64_t batch) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        ForwardCache &c = cache->c;
        if (batch < 1 || batch > c.max_batch)
            fail(SNN_ERR_BATCH, "batch %lld is outside [1, %lld] (the cache's max_batch)",
                 (long long)batch, (long long)c.max_batch);
        if (batch != c.batch) c.input_batch = -1;
        c.batch = batch;
    });
}

SNN_API snn_status snn_cache_batch(const snn_forward_cache *cache, int64_t *batch,
                                   int64_t *max_batch) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(batch, "batch");
        need(max_batch, "max_batch");
        *batch = cache->c.batch;
        *max_batch = cache->c.max_batch;
    });
}

SNN_API snn_status snn_cache_set_training(snn_forward_cache *cache, int32_t on) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        if (on != 0 && on != 1) fail(SNN_ERR_INVALID_ARGUMENT, "on is %d; expected 0 (inference) or 1 (training)", on);
        cache->c.training = on != 0;
    });
}

SNN_API snn_status snn_cache_training(const snn_forward_cache *cache, int32_t *on) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(on, "on");
        *on = cache->c.training ? 1 : 0;
    });
}

SNN_API snn_status snn_cache_set_seed(snn_forward_cache *cache, uint64_t seed) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        cache->c.seed = seed;
        cache->c.passes = 0;
    });
}

SNN_API snn_status snn_cache_rng_state(const snn_forward_cache *cache, uint64_t *seed,
                                       uint64_t *passes) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(seed, "seed");
        need(passes, "passes");
        *seed = cache->c.seed;
        *passes = cache->c.passes;
    });
}

SNN_API snn_status snn_cache_set_rng_state(snn_forward_cache *cache, uint64_t seed,
                                           uint64_t passes) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        cache->c.seed = seed;
        cache->c.passes = passes;
    });
}

SNN_API snn_status snn_set_inputs(snn_forward_cache *cache, const float *inputs, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(inputs, "inputs");
        ForwardCache &c = cache->c;
        const size_t features = features_of(c);
        const size_t expected = size_t(c.batch) * features;
        if (count != expected)
            fail(SNN_ERR_COUNT, "expected %zu floats (batch %lld x %zu), got %zu", expected,
                 (long long)c.batch, features, count);
        check_finite_host(inputs, count, "inputs");
        c.backend->upload(c.stream.get(), c.acts[0], inputs, count * sizeof(float));
        inputs_written(c, "snn_set_inputs");
    });
}

SNN_API snn_status snn_set_inputs_gather(snn_forward_cache *cache, const float *data,
                                         size_t sample_count, const int64_t *indices, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(data, "data");
        need(indices, "indices");
        ForwardCache &c = cache->c;
        check_batch_n(n, c.max_batch);
        check_indices(indices, n, sample_count);
        const size_t features = features_of(c);
        c.backend->gather_upload(c.stream.get(), c.acts[0], data, indices, n, features * sizeof(float));
        c.batch = int64_t(n);
        inputs_written(c, "snn_set_inputs_gather");
    });
}

SNN_API snn_status snn_set_inputs_device(snn_forward_cache *cache, const float *device_inputs,
                                         size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(device_inputs, "device_inputs");
        ForwardCache &c = cache->c;
        if (c.backend->device() == SNN_DEVICE_CPU)
            fail(SNN_ERR_DEVICE_MISMATCH, "the cache is on the CPU; use snn_set_inputs for host memory");
        const size_t features = features_of(c);
        const size_t expected = size_t(c.batch) * features;
        if (count != expected)
            fail(SNN_ERR_COUNT, "expected %zu floats (batch %lld x %zu), got %zu", expected,
                 (long long)c.batch, features, count);
        c.backend->copy_from_caller(c.stream.get(), c.acts[0], device_inputs, count * sizeof(float));
        inputs_written(c, "snn_set_inputs_device");
    });
}

SNN_API snn_status snn_forward(snn_forward_cache *cache, const snn_model *model) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(model, "model");
        ForwardCache &c = cache->c;
        check_model(c, model->m, "the forward cache");
        if (c.input_batch < 1)
            fail(SNN_ERR_STATE, "no inputs set for the current batch (call snn_set_inputs first)");
        forward_pass(c, model->m);
        record_pass(c, model->m);
    });
}

SNN_API snn_status snn_outputs(const snn_forward_cache *cache, const float **data, size_t *count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(data, "data");
        need(count, "count");
        const ForwardCache &c = cache->c;
        if (c.backend->device() != SNN_DEVICE_CPU)
            fail(SNN_ERR_DEVICE_MISMATCH, "the cache is on GPU %d; use snn_get_outputs to copy",
                 c.backend->device());
        if (c.forward_batch < 0) fail(SNN_ERR_STATE, "no forward pass yet");
        *data = c.acts.back();
        *count = size_t(c.forward_batch) * size_t(c.net.output().size());
    });
}

SNN_API snn_status snn_get_outputs(const snn_forward_cache *cache, float *dst, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(dst, "dst");
        const ForwardCache &c = cache->c;
        if (c.forward_batch < 0) fail(SNN_ERR_STATE, "no forward pass yet");
        const size_t outputs = size_t(c.net.output().size());
        const size_t expected = size_t(c.forward_batch) * outputs;
        if (count != expected)
            fail(SNN_ERR_COUNT, "expected %zu floats (batch %lld x %zu), got %zu", expected,
                 (long long)c.forward_batch, outputs, count);
        c.backend->download(c.stream.get(), dst, c.acts.back(), count * sizeof(float));
    });
}

// ---- data sets -------------------------------------------------------------------

SNN_API snn_status snn_dataset_create(int32_t device, const float *samples, size_t sample_count,
                                      size_t features, const int32_t *labels, snn_dataset **out) {
    return guarded(__func__, [&] {
        need(samples, "samples");
        need(out, "out");
        if (sample_count == 0 || features == 0)
            fail(SNN_ERR_INVALID_ARGUMENT, "sample_count (%zu) and features (%zu) must be > 0",
                 sample_count, features);
        if (features > SIZE_MAX / sizeof(float) / sample_count)
            fail(SNN_ERR_INVALID_ARGUMENT, "%zu samples x %zu features is too large", sample_count, features);
        Backend &be = backend_for(device);
        auto ds = std::make_unique<snn_dataset>();
        ds->backend = &be;
        ds->count = sample_count;
        ds->features = features;
        ds->stream = OwnedStream(be, 0, false);
        ds->samples = DeviceBuffer(be, sample_count * features * sizeof(float));
        be.upload(ds->stream.get(), ds->samples.get(), samples, sample_count * features * sizeof(float));
        if (labels) {
            for (size_t i = 0; i < sample_count; ++i)
                if (labels[i] < 0)
                    fail(SNN_ERR_INVALID_ARGUMENT, "labels[%zu] = %d is negative", i, labels[i]);
            ds->host_labels.assign(labels, labels + sample_count);
            ds->labels = DeviceBuffer(be, sample_count * sizeof(int32_t));
            be.upload(ds->stream.get(), ds->labels.get(), labels, sample_count * sizeof(int32_t));
        }
        be.synchronize(ds->stream.get());
        *out = ds.release();
    });
}

SNN_API void snn_dataset_destroy(snn_dataset *dataset) {
    DeviceScope device_scope;
    delete dataset;
}

SNN_API snn_status snn_set_inputs_from_dataset(snn_forward_cache *cache, const snn_dataset *dataset,
                                               const int64_t *indices, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(dataset, "dataset");
        need(indices, "indices");
        ForwardCache &c = cache->c;
        if (dataset->backend != c.backend)
            fail(SNN_ERR_DEVICE_MISMATCH, "the data set is on %s but the cache on %s",
                 device_name(dataset->backend->device()).c_str(), device_name(c.backend->device()).c_str());
        if (dataset->features != features_of(c))
            fail(SNN_ERR_COUNT, "the data set has %zu features per sample, the model takes %zu",
                 dataset->features, features_of(c));
        check_batch_n(n, c.max_batch);
        check_indices(indices, n, dataset->count);
        c.backend->wait(c.stream.get(), dataset->stream.get());
        c.backend->gather_device(c.stream.get(), c.acts[0], dataset->samples.get(), indices, n,
                                 dataset->features * sizeof(float));
        c.batch = int64_t(n);
        inputs_written(c, "snn_set_inputs_from_dataset");
    });
}

}  // extern "C"
