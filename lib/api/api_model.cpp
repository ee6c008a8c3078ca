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

// Float inputs: refused for a model that takes token ids.
void need_float_inputs(const ForwardCache &c) {
    if (c.net.input().is_tokens)
        fail(SNN_ERR_UNSUPPORTED, "the model's input is token ids (%s): use snn_set_tokens",
             shape_text(c.net.input()).c_str());
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
        model->m.params_viewed = true;
    });
}

SNN_API snn_status snn_get_parameters(const snn_model *model, float *dst, size_t count) {
    return guarded(__func__, [&] {
        need(model, "model");
        check_buffer(dst, "dst", count, count_of(model->m.net.param_count, "the parameter count"));
        model_get_parameters(model->m, dst);
    });
}

SNN_API snn_status snn_set_parameters(snn_model *model, const float *src, size_t count) {
    return guarded(__func__, [&] {
        need(model, "model");
        check_buffer(src, "src", count, count_of(model->m.net.param_count, "the parameter count"));
        model_set_parameters(model->m, src, "snn_set_parameters");
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
        check_buffer(dst, "dst", count, count_of(model->m.net.state_count, "the state count"));
        model_get_state(model->m, dst);
    });
}

SNN_API snn_status snn_set_state(snn_model *model, const float *src, size_t count) {
    return guarded(__func__, [&] {
        need(model, "model");
        check_buffer(src, "src", count, count_of(model->m.net.state_count, "the state count"));
        model_set_state(model->m, src, "snn_set_state");
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
        forward_set_batch(cache->c, batch);
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
        forward_set_training(cache->c, on != 0);
    });
}

SNN_API snn_status snn_cache_training(const snn_forward_cache *cache, int32_t *on) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(on, "on");
        *on = cache->c.training ? 1 : 0;
    });
}

SNN_API snn_status snn_cache_set_inference_rewrites(snn_forward_cache *cache, int32_t on) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        if (on != 0 && on != 1) fail(SNN_ERR_INVALID_ARGUMENT, "on is %d; expected 0 (off) or 1 (on)", on);
        forward_set_rewrites(cache->c, on != 0);
    });
}

SNN_API snn_status snn_cache_inference_rewrites(const snn_forward_cache *cache, int32_t *on) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(on, "on");
        *on = cache->c.rewrites ? 1 : 0;
    });
}

SNN_API snn_status snn_cache_set_seed(snn_forward_cache *cache, uint64_t seed) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        forward_set_rng(cache->c, seed, 0);
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
        forward_set_rng(cache->c, seed, passes);
    });
}

SNN_API snn_status snn_set_inputs(snn_forward_cache *cache, const float *inputs, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        ForwardCache &c = cache->c;
        need_float_inputs(c);
        check_buffer(inputs, "inputs", count, batch_count(c.batch, input_features(c)));
        check_finite_host(inputs, count, "inputs");
        forward_set_inputs(c, inputs, "snn_set_inputs");
    });
}

SNN_API snn_status snn_set_inputs_gather(snn_forward_cache *cache, const float *data,
                                         size_t sample_count, const int64_t *indices, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need_buffer(data, "data", sample_count);
        need_buffer(indices, "indices", n);
        ForwardCache &c = cache->c;
        need_float_inputs(c);
        check_batch_n(n, c.max_batch);
        check_indices(indices, n, sample_count);
        forward_gather_inputs(c, data, indices, n, "snn_set_inputs_gather");
    });
}

SNN_API snn_status snn_set_inputs_device(snn_forward_cache *cache, const float *device_inputs,
                                         size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need_buffer(device_inputs, "device_inputs", count);
        ForwardCache &c = cache->c;
        need_float_inputs(c);
        if (c.backend->device() == SNN_DEVICE_CPU)
            fail(SNN_ERR_DEVICE_MISMATCH, "the cache is on the CPU; use snn_set_inputs for host memory");
        check_buffer(device_inputs, "device_inputs", count, batch_count(c.batch, input_features(c)));
        forward_set_inputs_device(c, device_inputs, "snn_set_inputs_device");
    });
}

SNN_API snn_status snn_forward(snn_forward_cache *cache, const snn_model *model) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(model, "model");
        // The C signature keeps its const snn_model* (changing it would break
        // the ABI and the bindings); snn.h says that a training-mode pass
        // updates the model's running statistics, and the engine takes the
        // model as mutable for that.
        Model &m = const_cast<Model &>(model->m);
        check_model(cache->c, m, "the forward cache");
        forward_pass(cache->c, m);
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
        const size_t n = forward_output_count(c);
        *data = c.acts.back();
        *count = n;
    });
}

SNN_API snn_status snn_get_outputs(const snn_forward_cache *cache, float *dst, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need_buffer(dst, "dst", count);
        const ForwardCache &c = cache->c;
        forward_output_count(c);
        check_buffer(dst, "dst", count, batch_count(c.forward_batch, output_features(c)));
        forward_get_outputs(c, dst);
    });
}

// ---- data sets -------------------------------------------------------------------

SNN_API snn_status snn_dataset_create(int32_t device, const float *samples, size_t sample_count,
                                      size_t features, const int32_t *labels, snn_dataset **out) {
    return guarded(__func__, [&] {
        need_buffer(samples, "samples", sample_count);
        need(out, "out");
        if (sample_count == 0 || features == 0)
            fail(SNN_ERR_INVALID_ARGUMENT, "sample_count (%zu) and features (%zu) must be > 0",
                 sample_count, features);
        if (features > SIZE_MAX / sizeof(float) / sample_count)
            fail(SNN_ERR_INVALID_ARGUMENT, "%zu samples x %zu features is too large", sample_count, features);
        Backend &be = backend_for(device);
        if (labels)
            for (size_t i = 0; i < sample_count; ++i)
                if (labels[i] < 0)
                    fail(SNN_ERR_INVALID_ARGUMENT, "labels[%zu] = %d is negative", i, labels[i]);
        auto ds = std::make_unique<snn_dataset>();
        dataset_init(*ds, be, samples, sample_count, features, labels);
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
        need_buffer(indices, "indices", n);
        ForwardCache &c = cache->c;
        if (dataset->backend != c.backend)
            fail(SNN_ERR_DEVICE_MISMATCH, "the data set is on %s but the cache on %s",
                 device_name(dataset->backend->device()).c_str(), device_name(c.backend->device()).c_str());
        const Shape &in = c.net.input();
        if (dataset->tokens != in.is_tokens)
            fail(SNN_ERR_UNSUPPORTED, "the data set holds %s but the model's input is %s",
                 dataset->tokens ? "token ids" : "floats", shape_text(in).c_str());
        if (dataset->features != input_features(c))
            fail(SNN_ERR_COUNT, "the data set has %zu %s per sample, the model takes %zu", dataset->features,
                 dataset->tokens ? "tokens" : "features", input_features(c));
        if (dataset->tokens && dataset->max_token >= c.net.layers.front().units)
            fail(SNN_ERR_TOKEN, "the data set holds token id %d, outside the model's vocabulary [0, %lld)",
                 dataset->max_token, (long long)c.net.layers.front().units);
        if (dataset->has_lengths)
            for (size_t i = 1; i < c.net.layers.size(); ++i)
                if (c.net.layers[i].out.is_seq && c.net.layers[i].out.h != in.h)
                    fail(SNN_ERR_UNSUPPORTED,
                         "the data set has lengths but layer %zu's output has %lld steps, the input %lld: lengths "
                         "need every sequence layer to keep the input's steps",
                         i, (long long)c.net.layers[i].out.h, (long long)in.h);
        check_batch_n(n, c.max_batch);
        check_indices(indices, n, dataset->count);
        forward_gather_inputs_device(c, dataset->stream.get(), dataset->samples.f(), indices, n,
                                     "snn_set_inputs_from_dataset");
        if (dataset->has_lengths)
            forward_gather_lengths_device(c, dataset->stream.get(), dataset->lengths.i32(), indices, n);
    });
}

}  // extern "C"
