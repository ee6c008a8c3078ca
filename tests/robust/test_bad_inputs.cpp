// Every function of include/snn.h called with bad arguments. Each row states
// the exact documented status and words that snn_last_error() must contain
// (usually the argument's name), so a reader sees what each mistake returns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "snn.h"

namespace {

// A missing file's reason as the system words it: strerror's, or on Windows
// FormatMessage's, which differs between versions (and Wine): there only the
// message's own words.
#ifdef _WIN32
const char *const kNoSuchFile = "cannot open";
#else
const char *const kNoSuchFile = "No such file or directory";
#endif

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// A status row: the call, the status it must return, and words of the message.
struct Row {
    const char *call;
    snn_status expected;
    const char *words;
    std::function<snn_status()> run;
};

// "Any GPU error": the GPU is missing in some way on this machine.
constexpr snn_status kAnyGpuError = -1;
bool is_gpu_error(snn_status s) {
    return s == SNN_ERR_GPU_PLUGIN_NOT_FOUND || s == SNN_ERR_GPU_DRIVER || s == SNN_ERR_NO_GPU ||
           s == SNN_ERR_GPU_INDEX;
}

// The handles the rows use: models A and B of the same spec, their caches
// and optimisers, and a data set. fa has had inputs and a forward pass.
struct World {
    snn_model *a = nullptr, *b = nullptr;
    snn_forward_cache *fa = nullptr, *fb = nullptr, *fresh_f = nullptr;
    snn_backward_cache *ba = nullptr, *bb = nullptr, *fresh_b = nullptr, *small_b = nullptr;
    snn_optimiser *adam = nullptr, *sgd = nullptr, *rms = nullptr, *adam_b = nullptr;
    snn_dataset *ds = nullptr, *ds_nolabels = nullptr, *ds_wide = nullptr;
    std::vector<float> x = std::vector<float>(16, 0.5f);  // batch 4 x 4 features
    std::vector<float> samples = std::vector<float>(40, 0.25f);  // 10 samples
    std::vector<int32_t> labels = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
    std::vector<int32_t> bad_labels = {0, 1, 0, 5, 0, 1, 0, 1, 0, 1};
    std::vector<float> buf = std::vector<float>(64);
    int64_t idx[5] = {0, 1, 2, 3, 4};
    int64_t idx_neg[1] = {-1};
    int64_t idx_past[1] = {10};
    int64_t idx_bad_label[1] = {3};

    World() {
        const char *spec = "input 4; dense 3 relu; dense 2";
        snn_model_create(spec, &a);
        snn_model_create(spec, &b);
        snn_preallocate(a, 4, &fa);
        snn_preallocate(b, 4, &fb);
        snn_preallocate(a, 4, &fresh_f);
        snn_preallocate_grads(a, 4, &ba);
        snn_preallocate_grads(b, 4, &bb);
        snn_preallocate_grads(a, 4, &fresh_b);
        snn_preallocate_grads(a, 2, &small_b);
        snn_optimiser_create(a, SNN_OPTIMISER_ADAM, &adam);
        snn_optimiser_create(a, SNN_OPTIMISER_SGD, &sgd);
        snn_optimiser_create(a, SNN_OPTIMISER_RMSPROP, &rms);
        snn_optimiser_create(b, SNN_OPTIMISER_ADAM, &adam_b);
        snn_dataset_create(SNN_DEVICE_CPU, samples.data(), 10, 4, labels.data(), &ds);
        snn_dataset_create(SNN_DEVICE_CPU, samples.data(), 10, 4, nullptr, &ds_nolabels);
        snn_dataset_create(SNN_DEVICE_CPU, samples.data(), 8, 5, nullptr, &ds_wide);
        snn_set_inputs(fa, x.data(), 16);
        snn_forward(fa, a);
        snn_set_inputs(fb, x.data(), 16);
        snn_forward(fb, b);
        snn_set_labels(ba, labels.data(), 4);
        snn_set_labels(bb, labels.data(), 4);
        snn_backprop(bb, fb, b, SNN_LOSS_LOGIT_CROSSENTROPY, nullptr);
    }
    ~World() {
        snn_dataset_destroy(ds_wide);
        snn_dataset_destroy(ds_nolabels);
        snn_dataset_destroy(ds);
        for (snn_optimiser *o : {adam, sgd, rms, adam_b}) snn_optimiser_destroy(o);
        for (snn_backward_cache *c : {ba, bb, fresh_b, small_b}) snn_backward_cache_destroy(c);
        for (snn_forward_cache *c : {fa, fb, fresh_f}) snn_forward_cache_destroy(c);
        snn_model_destroy(b);
        snn_model_destroy(a);
    }
};

TEST(BadInputs, EveryFunctionRejectsBadArgumentsWithItsDocumentedStatusAndMessage) {
    World w;
    snn_model *m = nullptr;
    snn_forward_cache *fc = nullptr;
    snn_backward_cache *bc = nullptr;
    snn_optimiser *op = nullptr;
    snn_dataset *dd = nullptr;
    size_t n = 0, n2 = 0, n3 = 0, n4 = 0;
    int64_t i64 = 0, i64b = 0, i64c = 0;
    int32_t dev = 0;
    double value = 0;
    float *fp = nullptr;
    const float *cfp = nullptr;
    float loss = 0;
    double loss_param = 0;
    char text[256];
    const int32_t gpu = snn_gpu_count() == 0 ? 0 : 1000;  // a GPU that cannot be used
    const float nan_inputs[16] = {0, std::nanf("")};
    float inf_inputs[16] = {0};
    inf_inputs[3] = float(kInf);
    const float nan_targets[8] = {0, 0, float(kNaN)};
    const int32_t label_neg[4] = {0, -1, 0, 0};
    const int32_t label_big[4] = {0, 1, 2, 0};
    const unsigned char garbage[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3};

    std::vector<Row> rows;
#define ROW(status, words, expr) rows.push_back({#expr, status, words, [&]() -> snn_status { return expr; }})

    // ---- settings
    ROW(SNN_ERR_INVALID_ARGUMENT, "n must be >= 1", snn_set_num_threads(0));
    ROW(SNN_ERR_INVALID_ARGUMENT, "got -5", snn_set_num_threads(-5));
    ROW(SNN_OK, "", snn_set_log_callback(nullptr, nullptr));
    ROW(SNN_OK, "", snn_set_check_finite(0));
    ROW(SNN_OK, "", snn_set_allow_tf32(0));

    // ---- model creation and the spec parser
    ROW(SNN_ERR_NULL_ARGUMENT, "spec is NULL", snn_model_create(nullptr, &m));
    ROW(SNN_ERR_NULL_ARGUMENT, "out is NULL", snn_model_create("input 4; dense 2", nullptr));
    ROW(SNN_ERR_SPEC, "spec is empty", snn_model_create("", &m));
    ROW(SNN_ERR_SPEC, "position 1 ('dense'): the first layer must be", snn_model_create("dense 3", &m));
    ROW(SNN_ERR_SPEC, "dens", snn_model_create("input 4; dens 3", &m));
    ROW(SNN_ERR_SPEC, "frobnicate", snn_model_create("input 4; dense 3 frobnicate", &m));
    ROW(SNN_ERR_SPEC, "bogus", snn_model_create("input 4; dense 3 init=bogus", &m));
    ROW(SNN_ERR_SPEC, "position 16 ('0'): dense needs a positive number", snn_model_create("input 4; dense 0", &m));
    ROW(SNN_ERR_SPEC, "input size must be", snn_model_create("input 0", &m));
    ROW(SNN_ERR_SPEC, "positive number of units", snn_model_create("input 4; dense 99999999999999999999999", &m));
    ROW(SNN_ERR_SPEC, "('-3')", snn_model_create("input 4; dense -3", &m));
    ROW(SNN_ERR_SPEC, "only as the first layer", snn_model_create("input 4; input 4", &m));
    ROW(SNN_ERR_SHAPE, "layer 1 (conv 5x5 1): input 2x2x1", snn_model_create("input 2x2x1; conv 5x5 1", &m));
    ROW(SNN_ERR_SHAPE, "layer 1", snn_model_create("input 4; conv 3x3 2", &m));
    ROW(SNN_ERR_SHAPE, "layer 1", snn_model_create("input 4; maxpool 2", &m));
    ROW(SNN_ERR_SHAPE, "too large", snn_model_create("input 100000x100000x100000; flatten", &m));

    // ---- describing a model
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_describe(nullptr, text, sizeof(text), &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "length is NULL", snn_model_describe(w.a, text, sizeof(text), nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "buf is NULL", snn_model_describe(w.a, nullptr, 10, &n));
    ROW(SNN_ERR_COUNT, "capacity 1", snn_model_describe(w.a, text, 1, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_layer_count(nullptr, &i64));
    ROW(SNN_ERR_NULL_ARGUMENT, "count is NULL", snn_model_layer_count(w.a, nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_layer_shape(nullptr, 0, &i64, &i64b, &i64c));
    ROW(SNN_ERR_NULL_ARGUMENT, "channels is NULL", snn_model_layer_shape(w.a, 0, nullptr, &i64b, &i64c));
    ROW(SNN_ERR_NULL_ARGUMENT, "height is NULL", snn_model_layer_shape(w.a, 0, &i64, nullptr, &i64c));
    ROW(SNN_ERR_NULL_ARGUMENT, "width is NULL", snn_model_layer_shape(w.a, 0, &i64, &i64b, nullptr));
    ROW(SNN_ERR_INVALID_ARGUMENT, "layer -1", snn_model_layer_shape(w.a, -1, &i64, &i64b, &i64c));
    ROW(SNN_ERR_INVALID_ARGUMENT, "layer 3", snn_model_layer_shape(w.a, 3, &i64, &i64b, &i64c));
    ROW(SNN_ERR_INVALID_ARGUMENT, "out of range", snn_model_layer_shape(w.a, INT64_MAX, &i64, &i64b, &i64c));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_layer_params(nullptr, 1, &n, &n2, &n3, &n4));
    ROW(SNN_ERR_NULL_ARGUMENT, "weight_offset is NULL", snn_model_layer_params(w.a, 1, nullptr, &n2, &n3, &n4));
    ROW(SNN_ERR_NULL_ARGUMENT, "weight_count is NULL", snn_model_layer_params(w.a, 1, &n, nullptr, &n3, &n4));
    ROW(SNN_ERR_NULL_ARGUMENT, "bias_offset is NULL", snn_model_layer_params(w.a, 1, &n, &n2, nullptr, &n4));
    ROW(SNN_ERR_NULL_ARGUMENT, "bias_count is NULL", snn_model_layer_params(w.a, 1, &n, &n2, &n3, nullptr));
    ROW(SNN_ERR_INVALID_ARGUMENT, "layer 99", snn_model_layer_params(w.a, 99, &n, &n2, &n3, &n4));
    ROW(SNN_ERR_INVALID_ARGUMENT, "layer -7", snn_model_layer_params(w.a, -7, &n, &n2, &n3, &n4));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_input_size(nullptr, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "features is NULL", snn_model_input_size(w.a, nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_output_size(nullptr, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "outputs is NULL", snn_model_output_size(w.a, nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_parameter_count(nullptr, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "count is NULL", snn_parameter_count(w.a, nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_init(nullptr, 1));

    // ---- parameters (the model has 4*3+3 + 3*2+2 = 23)
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_parameters(nullptr, &fp, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "data is NULL", snn_parameters(w.a, nullptr, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "count is NULL", snn_parameters(w.a, &fp, nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_get_parameters(nullptr, w.buf.data(), 23));
    ROW(SNN_ERR_NULL_ARGUMENT, "dst is NULL", snn_get_parameters(w.a, nullptr, 23));
    ROW(SNN_ERR_COUNT, "expected 23 floats", snn_get_parameters(w.a, w.buf.data(), 0));
    ROW(SNN_ERR_COUNT, "got 22", snn_get_parameters(w.a, w.buf.data(), 22));
    ROW(SNN_ERR_COUNT, "expected 23 floats", snn_get_parameters(w.a, w.buf.data(), SIZE_MAX));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_set_parameters(nullptr, w.buf.data(), 23));
    ROW(SNN_ERR_NULL_ARGUMENT, "src is NULL", snn_set_parameters(w.a, nullptr, 23));
    ROW(SNN_ERR_COUNT, "got 0", snn_set_parameters(w.a, w.buf.data(), 0));
    ROW(SNN_ERR_COUNT, "got 24", snn_set_parameters(w.a, w.buf.data(), 24));
    ROW(SNN_ERR_COUNT, "expected 23 floats", snn_set_parameters(w.a, w.buf.data(), SIZE_MAX));

    // ---- forward caches
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_preallocate(nullptr, 4, &fc));
    ROW(SNN_ERR_NULL_ARGUMENT, "out is NULL", snn_preallocate(w.a, 4, nullptr));
    ROW(SNN_ERR_BATCH, "max_batch", snn_preallocate(w.a, 0, &fc));
    ROW(SNN_ERR_BATCH, "got -1", snn_preallocate(w.a, -1, &fc));
    ROW(SNN_ERR_BATCH, "max_batch", snn_preallocate(w.a, INT64_MAX, &fc));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_cache_set_batch(nullptr, 2));
    ROW(SNN_ERR_BATCH, "batch 0", snn_cache_set_batch(w.fresh_f, 0));
    ROW(SNN_ERR_BATCH, "batch 5 is outside [1, 4]", snn_cache_set_batch(w.fresh_f, 5));
    ROW(SNN_ERR_BATCH, "batch -3", snn_cache_set_batch(w.fresh_f, -3));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_cache_batch(nullptr, &i64, &i64b));
    ROW(SNN_ERR_NULL_ARGUMENT, "batch is NULL", snn_cache_batch(w.fa, nullptr, &i64b));
    ROW(SNN_ERR_NULL_ARGUMENT, "max_batch is NULL", snn_cache_batch(w.fa, &i64, nullptr));

    // ---- inputs
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_inputs(nullptr, w.x.data(), 16));
    ROW(SNN_ERR_NULL_ARGUMENT, "inputs is NULL", snn_set_inputs(w.fresh_f, nullptr, 16));
    ROW(SNN_ERR_COUNT, "expected 16 floats (batch 4 x 4), got 0", snn_set_inputs(w.fresh_f, w.x.data(), 0));
    ROW(SNN_ERR_COUNT, "got 15", snn_set_inputs(w.fresh_f, w.x.data(), 15));
    ROW(SNN_ERR_COUNT, "expected 16 floats", snn_set_inputs(w.fresh_f, w.x.data(), SIZE_MAX));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_inputs_gather(nullptr, w.samples.data(), 10, w.idx, 2));
    ROW(SNN_ERR_NULL_ARGUMENT, "data is NULL", snn_set_inputs_gather(w.fresh_f, nullptr, 10, w.idx, 2));
    ROW(SNN_ERR_NULL_ARGUMENT, "indices is NULL", snn_set_inputs_gather(w.fresh_f, w.samples.data(), 10, nullptr, 2));
    ROW(SNN_ERR_BATCH, "batch 0", snn_set_inputs_gather(w.fresh_f, w.samples.data(), 10, w.idx, 0));
    ROW(SNN_ERR_BATCH, "batch 5 is outside [1, 4]", snn_set_inputs_gather(w.fresh_f, w.samples.data(), 10, w.idx, 5));
    ROW(SNN_ERR_INVALID_ARGUMENT, "indices[0] = -1", snn_set_inputs_gather(w.fresh_f, w.samples.data(), 10, w.idx_neg, 1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "indices[0] = 10 is outside [0, 10)", snn_set_inputs_gather(w.fresh_f, w.samples.data(), 10, w.idx_past, 1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "outside [0, 0)", snn_set_inputs_gather(w.fresh_f, w.samples.data(), 0, w.idx, 1));

    // ---- forward and outputs
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_forward(nullptr, w.a));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_forward(w.fa, nullptr));
    ROW(SNN_ERR_MODEL_MISMATCH, "forward cache was made for another model", snn_forward(w.fa, w.b));
    ROW(SNN_ERR_STATE, "no inputs set", snn_forward(w.fresh_f, w.a));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_outputs(nullptr, &cfp, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "data is NULL", snn_outputs(w.fa, nullptr, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "count is NULL", snn_outputs(w.fa, &cfp, nullptr));
    ROW(SNN_ERR_STATE, "no forward pass", snn_outputs(w.fresh_f, &cfp, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_get_outputs(nullptr, w.buf.data(), 8));
    ROW(SNN_ERR_NULL_ARGUMENT, "dst is NULL", snn_get_outputs(w.fa, nullptr, 8));
    ROW(SNN_ERR_COUNT, "expected 8 floats (batch 4 x 2), got 7", snn_get_outputs(w.fa, w.buf.data(), 7));
    ROW(SNN_ERR_COUNT, "got 0", snn_get_outputs(w.fa, w.buf.data(), 0));
    ROW(SNN_ERR_STATE, "no forward pass", snn_get_outputs(w.fresh_f, w.buf.data(), 8));

    // ---- backward caches, targets, labels
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_preallocate_grads(nullptr, 4, &bc));
    ROW(SNN_ERR_NULL_ARGUMENT, "out is NULL", snn_preallocate_grads(w.a, 4, nullptr));
    ROW(SNN_ERR_BATCH, "got 0", snn_preallocate_grads(w.a, 0, &bc));
    ROW(SNN_ERR_BATCH, "max_batch", snn_preallocate_grads(w.a, INT64_MAX, &bc));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_targets(nullptr, w.x.data(), 8));
    ROW(SNN_ERR_NULL_ARGUMENT, "targets is NULL", snn_set_targets(w.fresh_b, nullptr, 8));
    ROW(SNN_ERR_COUNT, "got 0", snn_set_targets(w.fresh_b, w.x.data(), 0));
    ROW(SNN_ERR_COUNT, "multiple of 2", snn_set_targets(w.fresh_b, w.x.data(), 3));
    ROW(SNN_ERR_COUNT, "up to 8 (max_batch 4), got 10", snn_set_targets(w.fresh_b, w.x.data(), 10));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_labels(nullptr, w.labels.data(), 4));
    ROW(SNN_ERR_NULL_ARGUMENT, "labels is NULL", snn_set_labels(w.fresh_b, nullptr, 4));
    ROW(SNN_ERR_BATCH, "batch 0", snn_set_labels(w.fresh_b, w.labels.data(), 0));
    ROW(SNN_ERR_BATCH, "batch 5", snn_set_labels(w.fresh_b, w.labels.data(), 5));
    ROW(SNN_ERR_LABEL, "label -1 of sample 1", snn_set_labels(w.fresh_b, label_neg, 4));
    ROW(SNN_ERR_LABEL, "label 2 of sample 2 is outside [0, 2)", snn_set_labels(w.fresh_b, label_big, 4));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_labels_gather(nullptr, w.labels.data(), 10, w.idx, 2));
    ROW(SNN_ERR_NULL_ARGUMENT, "labels is NULL", snn_set_labels_gather(w.fresh_b, nullptr, 10, w.idx, 2));
    ROW(SNN_ERR_NULL_ARGUMENT, "indices is NULL", snn_set_labels_gather(w.fresh_b, w.labels.data(), 10, nullptr, 2));
    ROW(SNN_ERR_BATCH, "batch 0", snn_set_labels_gather(w.fresh_b, w.labels.data(), 10, w.idx, 0));
    ROW(SNN_ERR_BATCH, "batch 5", snn_set_labels_gather(w.fresh_b, w.labels.data(), 10, w.idx, 5));
    ROW(SNN_ERR_INVALID_ARGUMENT, "indices[0] = -1", snn_set_labels_gather(w.fresh_b, w.labels.data(), 10, w.idx_neg, 1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "indices[0] = 10", snn_set_labels_gather(w.fresh_b, w.labels.data(), 10, w.idx_past, 1));
    ROW(SNN_ERR_LABEL, "label 5 of sample 0", snn_set_labels_gather(w.fresh_b, w.bad_labels.data(), 10, w.idx_bad_label, 1));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_input_gradient(nullptr, 1));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_loss_parameter(nullptr, SNN_LOSS_MSE, 1.0));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown loss 99", snn_set_loss_parameter(w.fresh_b, 99, 1.0));
    ROW(SNN_ERR_INVALID_ARGUMENT, "the mean squared error loss (SNN_LOSS_MSE) has no parameter", snn_set_loss_parameter(w.fresh_b, SNN_LOSS_MSE, 1.0));
    ROW(SNN_ERR_INVALID_ARGUMENT, "the cross-entropy loss (SNN_LOSS_LOGIT_CROSSENTROPY) has no parameter", snn_set_loss_parameter(w.fresh_b, SNN_LOSS_LOGIT_CROSSENTROPY, 1.0));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_get_loss_parameter(nullptr, SNN_LOSS_MSE, &loss_param));
    ROW(SNN_ERR_NULL_ARGUMENT, "value is NULL", snn_get_loss_parameter(w.fresh_b, SNN_LOSS_MSE, nullptr));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown loss -1", snn_get_loss_parameter(w.fresh_b, -1, &loss_param));
    ROW(SNN_ERR_INVALID_ARGUMENT, "the mean squared error loss (SNN_LOSS_MSE) has no parameter", snn_get_loss_parameter(w.fresh_b, SNN_LOSS_MSE, &loss_param));

    // ---- backprop
    ROW(SNN_ERR_NULL_ARGUMENT, "bwd is NULL", snn_backprop(nullptr, w.fa, w.a, SNN_LOSS_MSE, &loss));
    ROW(SNN_ERR_NULL_ARGUMENT, "fwd is NULL", snn_backprop(w.ba, nullptr, w.a, SNN_LOSS_MSE, &loss));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_backprop(w.ba, w.fa, nullptr, SNN_LOSS_MSE, &loss));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown loss 0", snn_backprop(w.ba, w.fa, w.a, 0, &loss));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown loss 99 (expected one of SNN_LOSS_MSE, SNN_LOSS_LOGIT_CROSSENTROPY", snn_backprop(w.ba, w.fa, w.a, 99, &loss));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown loss -1", snn_backprop(w.ba, w.fa, w.a, -1, &loss));
    ROW(SNN_ERR_MODEL_MISMATCH, "backward cache was made for another model", snn_backprop(w.bb, w.fa, w.a, SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
    ROW(SNN_ERR_MODEL_MISMATCH, "forward cache was made for another model", snn_backprop(w.ba, w.fb, w.a, SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
    ROW(SNN_ERR_MODEL_MISMATCH, "another model", snn_backprop(w.ba, w.fa, w.b, SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
    ROW(SNN_ERR_STATE, "no forward pass", snn_backprop(w.ba, w.fresh_f, w.a, SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
    ROW(SNN_ERR_STATE, "no targets are set on the backward cache (call snn_set_targets first)", snn_backprop(w.fresh_b, w.fa, w.a, SNN_LOSS_MSE, &loss));
    ROW(SNN_ERR_STATE, "no labels are set on the backward cache (call snn_set_labels first)", snn_backprop(w.fresh_b, w.fa, w.a, SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
    ROW(SNN_ERR_BATCH, "forward batch 4 is above the backward cache's max_batch 2", snn_backprop(w.small_b, w.fa, w.a, SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
    ROW(SNN_ERR_NULL_ARGUMENT, "bwd is NULL", snn_backprop_with_output_gradient(nullptr, w.fa, w.a, w.x.data(), 8));
    ROW(SNN_ERR_NULL_ARGUMENT, "fwd is NULL", snn_backprop_with_output_gradient(w.ba, nullptr, w.a, w.x.data(), 8));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_backprop_with_output_gradient(w.ba, w.fa, nullptr, w.x.data(), 8));
    ROW(SNN_ERR_NULL_ARGUMENT, "output_gradient is NULL", snn_backprop_with_output_gradient(w.ba, w.fa, w.a, nullptr, 8));
    ROW(SNN_ERR_NULL_ARGUMENT, "output_gradient is NULL", snn_backprop_with_output_gradient(w.ba, w.fresh_f, w.a, nullptr, 8));
    ROW(SNN_ERR_COUNT, "expected 8 floats (batch 4 x 2), got 7", snn_backprop_with_output_gradient(w.ba, w.fa, w.a, w.x.data(), 7));
    ROW(SNN_ERR_COUNT, "got 0", snn_backprop_with_output_gradient(w.ba, w.fa, w.a, w.x.data(), 0));
    ROW(SNN_ERR_MODEL_MISMATCH, "another model", snn_backprop_with_output_gradient(w.bb, w.fa, w.a, w.x.data(), 8));
    ROW(SNN_ERR_STATE, "no forward pass", snn_backprop_with_output_gradient(w.ba, w.fresh_f, w.a, w.x.data(), 8));

    // ---- gradients
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_gradients(nullptr, &cfp, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "data is NULL", snn_gradients(w.ba, nullptr, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "count is NULL", snn_gradients(w.ba, &cfp, nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_get_gradients(nullptr, w.buf.data(), 23));
    ROW(SNN_ERR_NULL_ARGUMENT, "dst is NULL", snn_get_gradients(w.ba, nullptr, 23));
    ROW(SNN_ERR_COUNT, "expected 23 floats (the parameter count), got 22", snn_get_gradients(w.ba, w.buf.data(), 22));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_gradients(nullptr, w.buf.data(), 23));
    ROW(SNN_ERR_NULL_ARGUMENT, "src is NULL", snn_set_gradients(w.ba, nullptr, 23));
    ROW(SNN_ERR_COUNT, "expected 23 floats (the parameter count), got 24", snn_set_gradients(w.ba, w.buf.data(), 24));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_get_input_gradients(nullptr, w.buf.data(), 16));
    ROW(SNN_ERR_NULL_ARGUMENT, "dst is NULL", snn_get_input_gradients(w.ba, nullptr, 16));
    ROW(SNN_ERR_STATE, "snn_set_input_gradient", snn_get_input_gradients(w.fresh_b, w.buf.data(), 16));

    // ---- optimisers
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_optimiser_create(nullptr, SNN_OPTIMISER_ADAM, &op));
    ROW(SNN_ERR_NULL_ARGUMENT, "out is NULL", snn_optimiser_create(w.a, SNN_OPTIMISER_ADAM, nullptr));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown optimiser kind 0", snn_optimiser_create(w.a, 0, &op));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown optimiser kind 6", snn_optimiser_create(w.a, 6, &op));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown optimiser kind -1", snn_optimiser_create(w.a, -1, &op));
    ROW(SNN_ERR_NULL_ARGUMENT, "optimiser is NULL", snn_optimiser_set(nullptr, SNN_HP_LEARNING_RATE, 0.1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown hyperparameter 0", snn_optimiser_set(w.adam, 0, 0.1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown hyperparameter 99", snn_optimiser_set(w.adam, 99, 0.1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "learning rate", snn_optimiser_set(w.adam, SNN_HP_LEARNING_RATE, -0.1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "learning rate", snn_optimiser_set(w.adam, SNN_HP_LEARNING_RATE, kNaN));
    ROW(SNN_ERR_INVALID_ARGUMENT, "finite", snn_optimiser_set(w.adam, SNN_HP_LEARNING_RATE, kInf));
    ROW(SNN_ERR_INVALID_ARGUMENT, "finite", snn_optimiser_set(w.adam, SNN_HP_LEARNING_RATE, -kInf));
    ROW(SNN_ERR_INVALID_ARGUMENT, "beta1", snn_optimiser_set(w.adam, SNN_HP_BETA1, 1.0));
    ROW(SNN_ERR_INVALID_ARGUMENT, "beta1", snn_optimiser_set(w.adam, SNN_HP_BETA1, 1.5));
    ROW(SNN_ERR_INVALID_ARGUMENT, "beta1", snn_optimiser_set(w.adam, SNN_HP_BETA1, -0.1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "beta1", snn_optimiser_set(w.adam, SNN_HP_BETA1, kNaN));
    ROW(SNN_ERR_INVALID_ARGUMENT, "beta2", snn_optimiser_set(w.adam, SNN_HP_BETA2, 1.0));
    ROW(SNN_ERR_INVALID_ARGUMENT, "epsilon", snn_optimiser_set(w.adam, SNN_HP_EPSILON, 0.0));
    ROW(SNN_ERR_INVALID_ARGUMENT, "epsilon", snn_optimiser_set(w.adam, SNN_HP_EPSILON, -1e-8));
    ROW(SNN_ERR_INVALID_ARGUMENT, "weight decay", snn_optimiser_set(w.adam, SNN_HP_WEIGHT_DECAY, -0.01));
    ROW(SNN_ERR_INVALID_ARGUMENT, "momentum does not apply to Adam", snn_optimiser_set(w.adam, SNN_HP_MOMENTUM, 0.9));
    ROW(SNN_ERR_INVALID_ARGUMENT, "nesterov does not apply to Adam", snn_optimiser_set(w.adam, SNN_HP_NESTEROV, 1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "alpha does not apply to Adam", snn_optimiser_set(w.adam, SNN_HP_ALPHA, 0.9));
    ROW(SNN_ERR_INVALID_ARGUMENT, "momentum", snn_optimiser_set(w.sgd, SNN_HP_MOMENTUM, 1.0));
    ROW(SNN_ERR_INVALID_ARGUMENT, "momentum", snn_optimiser_set(w.sgd, SNN_HP_MOMENTUM, -0.5));
    ROW(SNN_ERR_INVALID_ARGUMENT, "nesterov must be 0 or 1, got 2", snn_optimiser_set(w.sgd, SNN_HP_NESTEROV, 2));
    ROW(SNN_ERR_INVALID_ARGUMENT, "Nesterov momentum needs momentum > 0", snn_optimiser_set(w.sgd, SNN_HP_NESTEROV, 1));
    ROW(SNN_ERR_INVALID_ARGUMENT, "epsilon does not apply to SGD", snn_optimiser_set(w.sgd, SNN_HP_EPSILON, 1e-8));
    ROW(SNN_ERR_INVALID_ARGUMENT, "beta1 does not apply to SGD", snn_optimiser_set(w.sgd, SNN_HP_BETA1, 0.9));
    ROW(SNN_ERR_INVALID_ARGUMENT, "alpha", snn_optimiser_set(w.rms, SNN_HP_ALPHA, 1.0));
    ROW(SNN_ERR_INVALID_ARGUMENT, "alpha", snn_optimiser_set(w.rms, SNN_HP_ALPHA, kNaN));
    ROW(SNN_ERR_INVALID_ARGUMENT, "beta2 does not apply to RMSProp", snn_optimiser_set(w.rms, SNN_HP_BETA2, 0.9));
    ROW(SNN_ERR_INVALID_ARGUMENT, "learning rate must be in [0, 3.40282347e+38] (finite in float32", snn_optimiser_set(w.adam, SNN_HP_LEARNING_RATE, 1e300));
    ROW(SNN_ERR_INVALID_ARGUMENT, "learning rate must be in [0, 3.40282347e+38]", snn_optimiser_set(w.sgd, SNN_HP_LEARNING_RATE, 3.5e38));
    ROW(SNN_ERR_INVALID_ARGUMENT, "weight decay must be in [0, 3.40282347e+38]", snn_optimiser_set(w.sgd, SNN_HP_WEIGHT_DECAY, 1e300));
    ROW(SNN_ERR_INVALID_ARGUMENT, "epsilon must be in [1.17549435e-38, 3.40282347e+38] (a normal float32", snn_optimiser_set(w.adam, SNN_HP_EPSILON, 1e-320));
    ROW(SNN_ERR_INVALID_ARGUMENT, "epsilon must be in [1.17549435e-38", snn_optimiser_set(w.rms, SNN_HP_EPSILON, 1e-39));
    ROW(SNN_ERR_NULL_ARGUMENT, "optimiser is NULL", snn_optimiser_get(nullptr, SNN_HP_LEARNING_RATE, &value));
    ROW(SNN_ERR_NULL_ARGUMENT, "value is NULL", snn_optimiser_get(w.adam, SNN_HP_LEARNING_RATE, nullptr));
    ROW(SNN_ERR_INVALID_ARGUMENT, "unknown hyperparameter 0", snn_optimiser_get(w.adam, 0, &value));
    ROW(SNN_ERR_INVALID_ARGUMENT, "does not apply to Adam", snn_optimiser_get(w.adam, SNN_HP_MOMENTUM, &value));
    ROW(SNN_ERR_NULL_ARGUMENT, "optimiser is NULL", snn_optimiser_step(nullptr, w.a, w.ba));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_optimiser_step(w.adam, nullptr, w.ba));
    ROW(SNN_ERR_NULL_ARGUMENT, "grads is NULL", snn_optimiser_step(w.adam, w.a, nullptr));
    ROW(SNN_ERR_MODEL_MISMATCH, "optimiser was made for another model", snn_optimiser_step(w.adam, w.b, w.bb));
    ROW(SNN_ERR_MODEL_MISMATCH, "backward cache was made for another model", snn_optimiser_step(w.adam_b, w.b, w.ba));
    ROW(SNN_ERR_STATE, "no gradient", snn_optimiser_step(w.adam, w.a, w.fresh_b));
    ROW(SNN_ERR_NULL_ARGUMENT, "optimiser is NULL", snn_optimiser_reset(nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "optimiser is NULL", snn_optimiser_step_count(nullptr, &i64));
    ROW(SNN_ERR_NULL_ARGUMENT, "steps is NULL", snn_optimiser_step_count(w.adam, nullptr));

    // ---- files
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_save(nullptr, "x.safetensors"));
    ROW(SNN_ERR_NULL_ARGUMENT, "path is NULL", snn_model_save(w.a, nullptr));
    ROW(SNN_ERR_IO, "/nonexistent-snn-dir/m", snn_model_save(w.a, "/nonexistent-snn-dir/m"));
    ROW(SNN_ERR_NULL_ARGUMENT, "path is NULL", snn_model_load(nullptr, &m));
    ROW(SNN_ERR_NULL_ARGUMENT, "out is NULL", snn_model_load("x", nullptr));
    ROW(SNN_ERR_IO, kNoSuchFile, snn_model_load("/nonexistent-snn-dir/m", &m));
    ROW(SNN_ERR_IO, "cannot open ''", snn_model_load("", &m));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_save_to_buffer(nullptr, nullptr, 0, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "size is NULL", snn_model_save_to_buffer(w.a, nullptr, 0, nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "buf is NULL", snn_model_save_to_buffer(w.a, nullptr, 1000, &n));
    ROW(SNN_ERR_COUNT, "capacity 8 is below", snn_model_save_to_buffer(w.a, text, 8, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "data is NULL", snn_model_load_from_buffer(nullptr, 100, &m));
    ROW(SNN_ERR_NULL_ARGUMENT, "out is NULL", snn_model_load_from_buffer(garbage, sizeof(garbage), nullptr));
    ROW(SNN_ERR_FILE_FORMAT, "truncated: 0 bytes", snn_model_load_from_buffer(garbage, 0, &m));
    ROW(SNN_ERR_FILE_FORMAT, "truncated: 7 bytes", snn_model_load_from_buffer(garbage, 7, &m));
    ROW(SNN_ERR_FILE_FORMAT, "header length", snn_model_load_from_buffer(garbage, sizeof(garbage), &m));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_checkpoint_save(nullptr, w.adam, "c"));
    ROW(SNN_ERR_NULL_ARGUMENT, "optimiser is NULL", snn_checkpoint_save(w.a, nullptr, "c"));
    ROW(SNN_ERR_NULL_ARGUMENT, "path is NULL", snn_checkpoint_save(w.a, w.adam, nullptr));
    ROW(SNN_ERR_MODEL_MISMATCH, "optimiser was made for another model", snn_checkpoint_save(w.b, w.adam, "c"));
    ROW(SNN_ERR_IO, "/nonexistent-snn-dir/c", snn_checkpoint_save(w.a, w.adam, "/nonexistent-snn-dir/c"));
    ROW(SNN_ERR_NULL_ARGUMENT, "path is NULL", snn_checkpoint_load(nullptr, &m, &op));
    ROW(SNN_ERR_NULL_ARGUMENT, "model_out is NULL", snn_checkpoint_load("c", nullptr, &op));
    ROW(SNN_ERR_NULL_ARGUMENT, "optimiser_out is NULL", snn_checkpoint_load("c", &m, nullptr));
    ROW(SNN_ERR_IO, kNoSuchFile, snn_checkpoint_load("/nonexistent-snn-dir/c", &m, &op));

    // ---- devices (this test expects no usable GPU at index `gpu`)
    ROW(SNN_ERR_GPU_INDEX, "device must be a GPU index >= 0, got -1", snn_gpu_status(-1));
    ROW(kAnyGpuError, "", snn_gpu_status(gpu));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_to_gpu(nullptr, 0));
    ROW(SNN_ERR_GPU_INDEX, "got -2", snn_to_gpu(w.a, -2));
    ROW(kAnyGpuError, "", snn_to_gpu(w.a, gpu));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_to_cpu(nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_to_best_device(nullptr, &dev));
    ROW(SNN_ERR_NULL_ARGUMENT, "device is NULL", snn_to_best_device(w.a, nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "model is NULL", snn_model_device(nullptr, &dev));
    ROW(SNN_ERR_NULL_ARGUMENT, "device is NULL", snn_model_device(w.a, nullptr));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_inputs_device(nullptr, w.x.data(), 16));
    ROW(SNN_ERR_NULL_ARGUMENT, "device_inputs is NULL", snn_set_inputs_device(w.fa, nullptr, 16));
    ROW(SNN_ERR_DEVICE_MISMATCH, "the cache is on the CPU", snn_set_inputs_device(w.fa, w.x.data(), 16));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_gradients_device(nullptr, &fp, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "data is NULL", snn_gradients_device(w.ba, nullptr, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "count is NULL", snn_gradients_device(w.ba, &fp, nullptr));
    ROW(SNN_ERR_DEVICE_MISMATCH, "the cache is on the CPU; use snn_gradients", snn_gradients_device(w.ba, &fp, &n));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_backward_cache_synchronize(nullptr));
    ROW(SNN_OK, "", snn_backward_cache_synchronize(w.ba));

    // ---- data sets
    ROW(kAnyGpuError, "", snn_dataset_create(gpu, w.samples.data(), 10, 4, nullptr, &dd));
    ROW(SNN_ERR_NULL_ARGUMENT, "samples is NULL", snn_dataset_create(SNN_DEVICE_CPU, nullptr, 10, 4, nullptr, &dd));
    ROW(SNN_ERR_NULL_ARGUMENT, "out is NULL", snn_dataset_create(SNN_DEVICE_CPU, w.samples.data(), 10, 4, nullptr, nullptr));
    ROW(SNN_ERR_INVALID_ARGUMENT, "sample_count (0)", snn_dataset_create(SNN_DEVICE_CPU, w.samples.data(), 0, 4, nullptr, &dd));
    ROW(SNN_ERR_INVALID_ARGUMENT, "features (0)", snn_dataset_create(SNN_DEVICE_CPU, w.samples.data(), 10, 0, nullptr, &dd));
    ROW(SNN_ERR_INVALID_ARGUMENT, "too large", snn_dataset_create(SNN_DEVICE_CPU, w.samples.data(), SIZE_MAX / 2, 4, nullptr, &dd));
    ROW(SNN_ERR_INVALID_ARGUMENT, "labels[1] = -1", snn_dataset_create(SNN_DEVICE_CPU, w.samples.data(), 4, 4, label_neg, &dd));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_inputs_from_dataset(nullptr, w.ds, w.idx, 2));
    ROW(SNN_ERR_NULL_ARGUMENT, "dataset is NULL", snn_set_inputs_from_dataset(w.fresh_f, nullptr, w.idx, 2));
    ROW(SNN_ERR_NULL_ARGUMENT, "indices is NULL", snn_set_inputs_from_dataset(w.fresh_f, w.ds, nullptr, 2));
    ROW(SNN_ERR_COUNT, "5 features per sample, the model takes 4", snn_set_inputs_from_dataset(w.fresh_f, w.ds_wide, w.idx, 2));
    ROW(SNN_ERR_BATCH, "batch 0", snn_set_inputs_from_dataset(w.fresh_f, w.ds, w.idx, 0));
    ROW(SNN_ERR_BATCH, "batch 5", snn_set_inputs_from_dataset(w.fresh_f, w.ds, w.idx, 5));
    ROW(SNN_ERR_INVALID_ARGUMENT, "indices[0] = 10", snn_set_inputs_from_dataset(w.fresh_f, w.ds, w.idx_past, 1));
    ROW(SNN_ERR_NULL_ARGUMENT, "cache is NULL", snn_set_labels_from_dataset(nullptr, w.ds, w.idx, 2));
    ROW(SNN_ERR_NULL_ARGUMENT, "dataset is NULL", snn_set_labels_from_dataset(w.fresh_b, nullptr, w.idx, 2));
    ROW(SNN_ERR_NULL_ARGUMENT, "indices is NULL", snn_set_labels_from_dataset(w.fresh_b, w.ds, nullptr, 2));
    ROW(SNN_ERR_STATE, "without labels", snn_set_labels_from_dataset(w.fresh_b, w.ds_nolabels, w.idx, 2));
    ROW(SNN_ERR_BATCH, "batch 5", snn_set_labels_from_dataset(w.fresh_b, w.ds, w.idx, 5));
    ROW(SNN_ERR_INVALID_ARGUMENT, "indices[0] = -1", snn_set_labels_from_dataset(w.fresh_b, w.ds, w.idx_neg, 1));

    // ---- NaN and Inf with the finite check on
    ROW(SNN_OK, "", snn_set_check_finite(1));
    ROW(SNN_ERR_NOT_FINITE, "inputs[1] is nan", snn_set_inputs(w.fresh_f, nan_inputs, 16));
    ROW(SNN_ERR_NOT_FINITE, "inputs[3] is inf", snn_set_inputs(w.fresh_f, inf_inputs, 16));
    ROW(SNN_ERR_NOT_FINITE, "targets[2] is nan", snn_set_targets(w.fresh_b, nan_targets, 8));
    ROW(SNN_ERR_NOT_FINITE, "output_gradient[2] is nan", snn_backprop_with_output_gradient(w.ba, w.fa, w.a, nan_targets, 8));
    ROW(SNN_OK, "", snn_set_check_finite(0));

    // ---- functions without a status
    ROW(SNN_OK, "", snn_has_feature(nullptr) == 0 ? SNN_OK : SNN_ERR_INTERNAL);
    ROW(SNN_OK, "", snn_has_feature("") == 0 ? SNN_OK : SNN_ERR_INTERNAL);
    ROW(SNN_OK, "", snn_has_feature("cp") == 0 && snn_has_feature("cpu") == 1 ? SNN_OK : SNN_ERR_INTERNAL);
    ROW(SNN_OK, "", std::strcmp(snn_status_string(9999), "unknown status") == 0 ? SNN_OK : SNN_ERR_INTERNAL);
    ROW(SNN_OK, "", std::strcmp(snn_status_string(-1), "unknown status") == 0 ? SNN_OK : SNN_ERR_INTERNAL);
    ROW(SNN_OK, "", snn_version_number() == SNN_VERSION_NUMBER && std::strcmp(snn_version_string(), SNN_VERSION_STRING) == 0 ? SNN_OK : SNN_ERR_INTERNAL);
    ROW(SNN_OK, "", snn_build_features() != nullptr && snn_last_error() != nullptr ? SNN_OK : SNN_ERR_INTERNAL);
    ROW(SNN_OK, "", snn_get_num_threads() >= 1 ? SNN_OK : SNN_ERR_INTERNAL);
    ROW(SNN_OK, "", (snn_model_destroy(nullptr), snn_forward_cache_destroy(nullptr), SNN_OK));
    ROW(SNN_OK, "", (snn_backward_cache_destroy(nullptr), snn_optimiser_destroy(nullptr), SNN_OK));
    ROW(SNN_OK, "", (snn_dataset_destroy(nullptr), SNN_OK));
#undef ROW

    for (const Row &r : rows) {
        const snn_status got = r.run();
        if (r.expected == kAnyGpuError) {
            EXPECT_TRUE(is_gpu_error(got)) << r.call << " returned " << got << ": " << snn_last_error();
            EXPECT_STRNE(snn_last_error(), "") << r.call;
            continue;
        }
        EXPECT_EQ(got, r.expected) << r.call << ": " << snn_last_error();
        if (r.expected != SNN_OK) {
            EXPECT_NE(std::string(snn_last_error()).find(r.words), std::string::npos)
                << r.call << "\n  message: " << snn_last_error() << "\n  expected words: " << r.words;
        }
    }
    // Failed calls left every out parameter untouched.
    EXPECT_EQ(m, nullptr);
    EXPECT_EQ(fc, nullptr);
    EXPECT_EQ(bc, nullptr);
    EXPECT_EQ(op, nullptr);
    EXPECT_EQ(dd, nullptr);
    int32_t where = 0;
    snn_model_device(w.a, &where);
    EXPECT_EQ(where, SNN_DEVICE_CPU);  // the failed moves kept the model on the CPU
    printf("bad-input rows checked: %zu\n", rows.size());
    EXPECT_GE(rows.size(), 150u);
}

// A training step that produces NaN is refused and changes nothing.
TEST(BadInputs, ANonFiniteTrainingStepLeavesTheParametersUntouched) {
    World w;
    size_t count = 0;
    snn_parameter_count(w.a, &count);
    std::vector<float> before(count), after(count);
    snn_get_parameters(w.a, before.data(), count);

    ASSERT_EQ(snn_set_check_finite(1), SNN_OK);
    const std::vector<float> huge(16, 3e38f);  // finite inputs whose products overflow
    ASSERT_EQ(snn_set_inputs(w.fa, huge.data(), 16), SNN_OK);
    ASSERT_EQ(snn_forward(w.fa, w.a), SNN_OK);
    float loss = 123.0f;
    EXPECT_EQ(snn_backprop(w.ba, w.fa, w.a, SNN_LOSS_LOGIT_CROSSENTROPY, &loss), SNN_ERR_NOT_FINITE);
    EXPECT_NE(std::string(snn_last_error()).find("NaN or Inf"), std::string::npos) << snn_last_error();
    EXPECT_EQ(loss, 123.0f);
    EXPECT_EQ(snn_optimiser_step(w.adam, w.a, w.ba), SNN_ERR_NOT_FINITE);
    EXPECT_NE(std::string(snn_last_error()).find("left unchanged"), std::string::npos) << snn_last_error();
    ASSERT_EQ(snn_set_check_finite(0), SNN_OK);

    snn_get_parameters(w.a, after.data(), count);
    EXPECT_EQ(std::memcmp(before.data(), after.data(), count * sizeof(float)), 0);
    int64_t steps = -1;
    snn_optimiser_step_count(w.adam, &steps);
    EXPECT_EQ(steps, 0);
}

}  // namespace
