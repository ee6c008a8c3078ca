// The one rule for (pointer, count) arguments (snn.h, CONVENTIONS,
// "Buffers"), checked for every function that takes a caller's buffer with
// its element count: NULL with a count above 0 is SNN_ERR_NULL_ARGUMENT;
// a count other than the expected one is SNN_ERR_COUNT "expected N floats
// (...), got M" (NULL with 0 included); NULL with 0 is accepted where 0
// elements are expected; the right count with a real buffer succeeds.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "snn.h"

namespace {

// One model with parameters and state, its caches after a forward pass and
// a backprop with the input gradient, and a second model with neither
// parameters nor state (every parameter and state buffer of 0 floats).
struct World {
    snn_model *m = nullptr, *empty = nullptr;
    snn_forward_cache *f = nullptr;
    snn_backward_cache *b = nullptr;
    size_t params = 0, state = 0;
    static constexpr int64_t kBatch = 3;
    static constexpr size_t kIn = 4, kOut = 2;

    World() {
        EXPECT_EQ(snn_model_create("input 4; dense 3; batchnorm; relu; dense 2", &m), SNN_OK);
        EXPECT_EQ(snn_model_create("input 4; relu", &empty), SNN_OK);
        snn_parameter_count(m, &params);
        snn_state_count(m, &state);
        EXPECT_EQ(snn_preallocate(m, 4, &f), SNN_OK);
        EXPECT_EQ(snn_preallocate_grads(m, 4, &b), SNN_OK);
        EXPECT_EQ(snn_cache_set_batch(f, kBatch), SNN_OK);
        std::vector<float> x(kBatch * kIn, 0.5f);
        for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(i);
        EXPECT_EQ(snn_set_inputs(f, x.data(), x.size()), SNN_OK);
        EXPECT_EQ(snn_forward(f, m), SNN_OK);
        EXPECT_EQ(snn_set_input_gradient(b, 1), SNN_OK);
        std::vector<float> t(kBatch * kOut, 1.0f);
        EXPECT_EQ(snn_set_targets(b, t.data(), t.size()), SNN_OK);
        EXPECT_EQ(snn_backprop(b, f, m, SNN_LOSS_MSE, nullptr), SNN_OK);
    }
    ~World() {
        snn_backward_cache_destroy(b);
        snn_forward_cache_destroy(f);
        snn_model_destroy(empty);
        snn_model_destroy(m);
    }
};

// A function taking (pointer, count), the count it expects, and a valid
// buffer of that many floats to pass in the "right count" case.
struct Entry {
    const char *name;
    size_t expected;
    std::function<std::vector<float>(World &)> valid;  // its contents for a setter
    std::function<snn_status(World &, float *, size_t)> call;
};

std::vector<float> filled(size_t n, float v) { return std::vector<float>(n, v); }

std::vector<Entry> entries(World &w) {
    const size_t batch_in = World::kBatch * World::kIn, batch_out = World::kBatch * World::kOut;
    auto state_of = [](snn_model *m) {
        size_t n = 0;
        snn_state_count(m, &n);
        std::vector<float> s(n);
        snn_get_state(m, s.data(), n);
        return s;
    };
    return {
        {"snn_get_parameters", w.params, [&](World &) { return filled(w.params, 0); },
         [](World &x, float *p, size_t n) { return snn_get_parameters(x.m, p, n); }},
        {"snn_set_parameters", w.params, [&](World &) { return filled(w.params, 0.25f); },
         [](World &x, float *p, size_t n) { return snn_set_parameters(x.m, p, n); }},
        {"snn_get_state", w.state, [&](World &) { return filled(w.state, 0); },
         [](World &x, float *p, size_t n) { return snn_get_state(x.m, p, n); }},
        {"snn_set_state", w.state, [=](World &x) { return state_of(x.m); },
         [](World &x, float *p, size_t n) { return snn_set_state(x.m, p, n); }},
        {"snn_set_inputs", batch_in, [=](World &) { return filled(batch_in, 0.5f); },
         [](World &x, float *p, size_t n) { return snn_set_inputs(x.f, p, n); }},
        {"snn_get_outputs", batch_out, [=](World &) { return filled(batch_out, 0); },
         [](World &x, float *p, size_t n) { return snn_get_outputs(x.f, p, n); }},
        {"snn_backprop_with_output_gradient", batch_out, [=](World &) { return filled(batch_out, 0.5f); },
         [](World &x, float *p, size_t n) { return snn_backprop_with_output_gradient(x.b, x.f, x.m, p, n); }},
        {"snn_get_gradients", w.params, [&](World &) { return filled(w.params, 0); },
         [](World &x, float *p, size_t n) { return snn_get_gradients(x.b, p, n); }},
        {"snn_set_gradients", w.params, [&](World &) { return filled(w.params, 0.5f); },
         [](World &x, float *p, size_t n) { return snn_set_gradients(x.b, p, n); }},
        {"snn_get_input_gradients", batch_in, [=](World &) { return filled(batch_in, 0); },
         [](World &x, float *p, size_t n) { return snn_get_input_gradients(x.b, p, n); }},
    };
}

std::string last_error() { return snn_last_error(); }

TEST(BufferCounts, EveryPointerCountFunctionFollowsTheOneRule) {
    World w;
    ASSERT_GT(w.params, 0u);
    ASSERT_GT(w.state, 0u);
    for (const Entry &e : entries(w)) {
        SCOPED_TRACE(e.name);
        const std::string prefix = std::string(e.name) + ": ";
        const std::string expected = "expected " + std::to_string(e.expected) + " floats (";
        // NULL with 0: a count error naming what was expected.
        EXPECT_EQ(e.call(w, nullptr, 0), SNN_ERR_COUNT);
        EXPECT_EQ(last_error().rfind(prefix + expected, 0), 0u) << last_error();
        EXPECT_NE(last_error().find("), got 0"), std::string::npos) << last_error();
        // NULL with the right count: the pointer is named.
        EXPECT_EQ(e.call(w, nullptr, e.expected), SNN_ERR_NULL_ARGUMENT);
        EXPECT_NE(last_error().find(" is NULL"), std::string::npos) << last_error();
        // A real buffer with one float too many or too few.
        std::vector<float> buf = e.valid(w);
        buf.resize(e.expected + 1);
        EXPECT_EQ(e.call(w, buf.data(), e.expected + 1), SNN_ERR_COUNT);
        EXPECT_EQ(last_error(), prefix + expected + last_error().substr(prefix.size() + expected.size()))
            << last_error();
        EXPECT_NE(last_error().find("got " + std::to_string(e.expected + 1)), std::string::npos);
        EXPECT_EQ(e.call(w, buf.data(), e.expected - 1), SNN_ERR_COUNT);
        EXPECT_NE(last_error().find("got " + std::to_string(e.expected - 1)), std::string::npos);
        // The right count.
        buf.resize(e.expected);
        EXPECT_EQ(e.call(w, buf.data(), e.expected), SNN_OK) << last_error();
        // The backprop entry consumed nothing; the others leave a pass to
        // differentiate. Keep the forward pass fresh for the next entry.
        snn_forward(w.f, w.m);
    }
}

TEST(BufferCounts, NullWithZeroIsAcceptedWhereZeroFloatsAreExpected) {
    World w;
    size_t params = 1, state = 1;
    snn_parameter_count(w.empty, &params);
    snn_state_count(w.empty, &state);
    ASSERT_EQ(params, 0u);
    ASSERT_EQ(state, 0u);
    EXPECT_EQ(snn_get_parameters(w.empty, nullptr, 0), SNN_OK) << last_error();
    EXPECT_EQ(snn_set_parameters(w.empty, nullptr, 0), SNN_OK) << last_error();
    EXPECT_EQ(snn_get_state(w.empty, nullptr, 0), SNN_OK) << last_error();
    EXPECT_EQ(snn_set_state(w.empty, nullptr, 0), SNN_OK) << last_error();
    snn_backward_cache *b = nullptr;
    ASSERT_EQ(snn_preallocate_grads(w.empty, 2, &b), SNN_OK);
    EXPECT_EQ(snn_get_gradients(b, nullptr, 0), SNN_OK) << last_error();
    EXPECT_EQ(snn_set_gradients(b, nullptr, 0), SNN_OK) << last_error();
    // A count of 1 is still wrong, NULL or not.
    float one = 0;
    EXPECT_EQ(snn_set_parameters(w.empty, &one, 1), SNN_ERR_COUNT);
    EXPECT_EQ(last_error(), "snn_set_parameters: expected 0 floats (the parameter count), got 1");
    EXPECT_EQ(snn_get_state(w.empty, nullptr, 1), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(last_error(), "snn_get_state: dst is NULL");
    snn_backward_cache_destroy(b);
}

// Batches of whole samples: a count of samples (labels), or of floats that
// must be a multiple of the outputs (targets). An empty batch is refused
// however it is passed; NULL with samples is refused as NULL.
TEST(BufferCounts, BatchBuffersFollowTheSameNullRule) {
    World w;
    const int32_t labels[3] = {0, 1, 0};
    const int64_t idx[3] = {0, 1, 2};
    const float targets[6] = {0, 1, 0, 1, 0, 1};
    EXPECT_EQ(snn_set_labels(w.b, nullptr, 0), SNN_ERR_BATCH);
    EXPECT_EQ(snn_set_labels(w.b, nullptr, 3), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(last_error(), "snn_set_labels: labels is NULL");
    EXPECT_EQ(snn_set_labels(w.b, labels, 5), SNN_ERR_BATCH);
    EXPECT_EQ(snn_set_labels(w.b, labels, 3), SNN_OK);
    EXPECT_EQ(snn_set_labels_gather(w.b, labels, 3, nullptr, 0), SNN_ERR_BATCH);
    EXPECT_EQ(snn_set_labels_gather(w.b, labels, 3, nullptr, 2), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(last_error(), "snn_set_labels_gather: indices is NULL");
    EXPECT_EQ(snn_set_labels_gather(w.b, nullptr, 0, idx, 1), SNN_ERR_INVALID_ARGUMENT);  // [0, 0) is empty
    EXPECT_EQ(snn_set_labels_gather(w.b, labels, 3, idx, 3), SNN_OK);
    EXPECT_EQ(snn_set_inputs_gather(w.f, nullptr, 3, idx, 3), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(last_error(), "snn_set_inputs_gather: data is NULL");
    EXPECT_EQ(snn_set_targets(w.b, nullptr, 0), SNN_ERR_COUNT);
    EXPECT_EQ(last_error(), "snn_set_targets: expected a multiple of 2 floats (outputs) up to 8 (max_batch 4), got 0");
    EXPECT_EQ(snn_set_targets(w.b, nullptr, 6), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(last_error(), "snn_set_targets: targets is NULL");
    EXPECT_EQ(snn_set_targets(w.b, targets, 5), SNN_ERR_COUNT);
    EXPECT_EQ(snn_set_targets(w.b, targets, 6), SNN_OK);
    // An empty buffer is not a model file: a format error, not a NULL one.
    snn_model *out = nullptr;
    EXPECT_EQ(snn_model_load_from_buffer(nullptr, 0, &out), SNN_ERR_FILE_FORMAT);
    EXPECT_EQ(snn_model_load_from_buffer(nullptr, 8, &out), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(out, nullptr);
}

// The finite rule: with the check on, buffers that feed training (inputs,
// targets, an output gradient, gradients) refuse NaN and Inf; the model's
// own values (parameters, state) are stored as given, any float, as files
// keep them. With the check off nothing is scanned.
TEST(BufferCounts, FiniteCheckCoversTrainingInputsNotTheModelsValues) {
    World w;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x(World::kBatch * World::kIn, nan), out(World::kBatch * World::kOut, nan);
    std::vector<float> p(w.params, nan);
    snn_set_check_finite(1);
    EXPECT_EQ(snn_set_inputs(w.f, x.data(), x.size()), SNN_ERR_NOT_FINITE);
    EXPECT_EQ(last_error().rfind("snn_set_inputs: inputs[0] is nan", 0), 0u) << last_error();
    EXPECT_EQ(snn_set_targets(w.b, out.data(), out.size()), SNN_ERR_NOT_FINITE);
    EXPECT_EQ(snn_backprop_with_output_gradient(w.b, w.f, w.m, out.data(), out.size()), SNN_ERR_NOT_FINITE);
    EXPECT_EQ(snn_set_gradients(w.b, p.data(), p.size()), SNN_ERR_NOT_FINITE);
    std::vector<float> keep(w.params);
    snn_get_parameters(w.m, keep.data(), keep.size());
    EXPECT_EQ(snn_set_parameters(w.m, p.data(), p.size()), SNN_OK);
    snn_set_parameters(w.m, keep.data(), keep.size());
    snn_set_check_finite(0);
    EXPECT_EQ(snn_set_inputs(w.f, x.data(), x.size()), SNN_OK);
    EXPECT_EQ(snn_set_gradients(w.b, p.data(), p.size()), SNN_OK);
}

}  // namespace
