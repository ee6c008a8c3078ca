// Distinct handles used from several threads at once: each thread's results
// are bit-identical to the same work done alone.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "snn.h"

namespace {

const char *kSpec = "input 6x6x1; conv 3x3 4 relu; maxpool 2; flatten; dense 8 tanh; dense 3";
constexpr int kThreads = 4;
constexpr int kSteps = 15;
constexpr int64_t kBatch = 8;

std::vector<float> inputs_for(uint32_t seed, size_t n) {
    std::vector<float> x(n);
    for (float &v : x) v = float((seed = seed * 1664525u + 1013904223u) >> 8) / float(1 << 23) - 1.0f;
    return x;
}

// Trains a model from `seed` and returns its final parameters.
std::vector<float> train_alone(uint64_t seed) {
    std::vector<float> params;
    snn_model *m = nullptr;
    if (snn_model_create(kSpec, &m) != SNN_OK) return params;
    snn_model_init(m, seed);
    snn_forward_cache *f = nullptr;
    snn_backward_cache *b = nullptr;
    snn_optimiser *o = nullptr;
    snn_preallocate(m, kBatch, &f);
    snn_preallocate_grads(m, kBatch, &b);
    snn_optimiser_create(m, SNN_OPTIMISER_ADAM, &o);
    const std::vector<float> x = inputs_for(uint32_t(seed) + 1, size_t(kBatch) * 36);
    const int32_t labels[kBatch] = {0, 1, 2, 0, 1, 2, 0, 1};
    bool ok = true;
    for (int step = 0; step < kSteps && ok; ++step) {
        ok = snn_set_inputs(f, x.data(), x.size()) == SNN_OK && snn_set_labels(b, labels, kBatch) == SNN_OK &&
             snn_forward(f, m) == SNN_OK &&
             snn_backprop(b, f, m, SNN_LOSS_LOGIT_CROSSENTROPY, nullptr) == SNN_OK &&
             snn_optimiser_step(o, m, b) == SNN_OK;
    }
    size_t n = 0;
    snn_parameter_count(m, &n);
    if (ok) {
        params.resize(n);
        snn_get_parameters(m, params.data(), n);
    }
    snn_optimiser_destroy(o);
    snn_backward_cache_destroy(b);
    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
    return params;
}

TEST(Threads, IndependentModelsTrainedAtOnceEndAsIfTrainedAlone) {
    std::vector<std::vector<float>> alone(kThreads), together(kThreads);
    for (int t = 0; t < kThreads; ++t) alone[size_t(t)] = train_alone(uint64_t(100 + t));

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([t, &together] { together[size_t(t)] = train_alone(uint64_t(100 + t)); });
    for (auto &th : threads) th.join();

    for (int t = 0; t < kThreads; ++t) {
        ASSERT_FALSE(alone[size_t(t)].empty());
        ASSERT_EQ(alone[size_t(t)].size(), together[size_t(t)].size());
        EXPECT_EQ(std::memcmp(alone[size_t(t)].data(), together[size_t(t)].data(),
                              alone[size_t(t)].size() * sizeof(float)), 0)
            << "thread " << t;
    }
    EXPECT_NE(alone[0], alone[1]);  // different seeds, different models
}

TEST(Threads, ForwardCachesShareOneModelConcurrently) {
    snn_model *m = nullptr;
    ASSERT_EQ(snn_model_create(kSpec, &m), SNN_OK);
    auto run = [m](uint32_t seed, std::vector<float> *out) {
        snn_forward_cache *f = nullptr;
        if (snn_preallocate(m, kBatch, &f) != SNN_OK) return;
        const std::vector<float> x = inputs_for(seed, size_t(kBatch) * 36);
        out->assign(size_t(kBatch) * 3, 0.0f);
        for (int i = 0; i < 30; ++i)
            if (snn_set_inputs(f, x.data(), x.size()) != SNN_OK || snn_forward(f, m) != SNN_OK ||
                snn_get_outputs(f, out->data(), out->size()) != SNN_OK)
                out->clear();
        snn_forward_cache_destroy(f);
    };
    std::vector<std::vector<float>> alone(kThreads), together(kThreads);
    for (int t = 0; t < kThreads; ++t) run(uint32_t(7 + t), &alone[size_t(t)]);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(run, uint32_t(7 + t), &together[size_t(t)]);
    for (auto &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
        ASSERT_EQ(alone[size_t(t)].size(), size_t(kBatch) * 3);
        EXPECT_EQ(alone[size_t(t)], together[size_t(t)]) << "thread " << t;
    }
    snn_model_destroy(m);
}

}  // namespace
