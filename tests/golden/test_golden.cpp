// Golden tests: every case in data/ (written by generate.py from PyTorch)
// is replayed through the C API. The forward outputs, the loss, the
// gradient of every parameter and of the inputs, and the parameters after
// five optimiser steps must match PyTorch's float32 results.
//
// Usage: test_golden <data directory>
#include <gtest/gtest.h>
#include <snn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

std::string g_data_dir;

constexpr int kSteps = 5;

struct GoldenCase {
    std::string spec;
    snn_loss loss = 0;
    snn_optimiser_kind optimiser = 0;
    std::vector<std::pair<snn_hyperparameter, double>> hyperparameters;
    int64_t batch = 0;
    double abs_tolerance = 1.0;  // a case's own, stricter absolute tolerance
    std::map<std::string, std::vector<double>> arrays;

    std::vector<float> floats(const std::string &name) const {
        const std::vector<double> &v = arrays.at(name);
        return std::vector<float>(v.begin(), v.end());
    }
};

snn_hyperparameter hyperparameter_named(const std::string &name) {
    static const std::map<std::string, snn_hyperparameter> names = {
        {"lr", SNN_HP_LEARNING_RATE}, {"momentum", SNN_HP_MOMENTUM},
        {"nesterov", SNN_HP_NESTEROV}, {"weight_decay", SNN_HP_WEIGHT_DECAY},
        {"alpha", SNN_HP_ALPHA},       {"epsilon", SNN_HP_EPSILON},
        {"beta1", SNN_HP_BETA1},       {"beta2", SNN_HP_BETA2}};
    return names.at(name);
}

snn_optimiser_kind optimiser_named(const std::string &name) {
    static const std::map<std::string, snn_optimiser_kind> names = {
        {"sgd", SNN_OPTIMISER_SGD},
        {"adam", SNN_OPTIMISER_ADAM},
        {"adamw", SNN_OPTIMISER_ADAMW},
        {"rmsprop", SNN_OPTIMISER_RMSPROP}};
    return names.at(name);
}

// Reads the format described in generate.py.
GoldenCase read_case(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    GoldenCase c;
    std::string key;
    while (in >> key) {
        if (key == "spec") {
            std::getline(in >> std::ws, c.spec);
        } else if (key == "loss") {
            std::string name;
            in >> name;
            c.loss = name == "mse" ? SNN_LOSS_MSE : SNN_LOSS_LOGIT_CROSSENTROPY;
        } else if (key == "optimiser") {
            std::string line, name, option;
            std::getline(in, line);
            std::istringstream words(line);
            words >> name;
            c.optimiser = optimiser_named(name);
            // Momentum comes before Nesterov: snn checks Nesterov needs momentum.
            while (words >> option) {
                const size_t eq = option.find('=');
                c.hyperparameters.emplace_back(hyperparameter_named(option.substr(0, eq)),
                                               std::stod(option.substr(eq + 1)));
            }
            std::stable_sort(c.hyperparameters.begin(), c.hyperparameters.end(),
                             [](const auto &a, const auto &b) { return a.first < b.first; });
        } else if (key == "batch") {
            in >> c.batch;
        } else if (key == "tolerance") {
            in >> c.abs_tolerance;
        } else {
            size_t count = 0;
            in >> count;
            std::vector<double> &values = c.arrays[key];
            values.resize(count);
            for (double &v : values) in >> v;
        }
        if (!in) throw std::runtime_error("malformed golden file " + path + " near '" + key + "'");
    }
    return c;
}

// Largest |actual - expected| and whether every element lies within
// abs_tol + rel_tol * |expected|.
struct Comparison {
    double max_abs_error = 0.0;
    size_t worst_index = 0;
    size_t failures = 0;
};

Comparison compare(const std::vector<float> &actual, const std::vector<double> &expected,
                   double rel_tol, double abs_tol) {
    Comparison c;
    for (size_t i = 0; i < expected.size(); ++i) {
        const double err = std::fabs(double(actual[i]) - expected[i]);
        if (!(err <= abs_tol + rel_tol * std::fabs(expected[i]))) ++c.failures;
        if (!(err <= c.max_abs_error)) {
            c.max_abs_error = err;
            c.worst_index = i;
        }
    }
    return c;
}

// Tolerances for float32, per element: single results, and the parameters
// after five steps (Adam's first steps divide by sqrt(v), amplifying
// rounding). The absolute part is below the tiny gradients of saturated
// tanh (4.8e-7 at |z| = 8) and the cross-entropy of a confident row
// (6.1e-7). A case may give a stricter absolute tolerance (its reference
// computed in double).
constexpr double kRel = 1e-5, kAbs = 1e-7;
constexpr double kStepsRel = 1e-4, kStepsAbs = 1e-6;

class Golden : public ::testing::TestWithParam<std::string> {
protected:
    void expect_close(const char *what, const std::vector<float> &actual,
                      const std::vector<double> &expected, double rel, double abs) {
        ASSERT_EQ(actual.size(), expected.size()) << what;
        Comparison c = compare(actual, expected, rel, abs);
        std::printf("  %-20s %6zu values, max abs error %.3g\n", what, expected.size(),
                    c.max_abs_error);
        EXPECT_EQ(c.failures, 0u) << what << ": " << c.failures << " of " << expected.size()
                                  << " values off; worst at " << c.worst_index << ": snn "
                                  << actual[c.worst_index] << ", PyTorch "
                                  << expected[c.worst_index];
    }
};

TEST_P(Golden, MatchesPyTorch) {
    const GoldenCase g = read_case(g_data_dir + "/" + GetParam() + ".golden");
    std::printf("  spec: %s\n", g.spec.c_str());

    snn_model *model = nullptr;
    ASSERT_EQ(snn_model_create(g.spec.c_str(), &model), SNN_OK) << snn_last_error();
    const double abs_tol = std::min(kAbs, g.abs_tolerance);
    const std::vector<float> params = g.floats("params");
    ASSERT_EQ(snn_set_parameters(model, params.data(), params.size()), SNN_OK) << snn_last_error();

    snn_forward_cache *fwd = nullptr;
    snn_backward_cache *bwd = nullptr;
    snn_optimiser *opt = nullptr;
    ASSERT_EQ(snn_preallocate(model, g.batch, &fwd), SNN_OK);
    ASSERT_EQ(snn_preallocate_grads(model, g.batch, &bwd), SNN_OK);
    ASSERT_EQ(snn_set_input_gradient(bwd, 1), SNN_OK);

    const std::vector<float> inputs = g.floats("inputs");
    ASSERT_EQ(snn_set_inputs(fwd, inputs.data(), inputs.size()), SNN_OK) << snn_last_error();
    if (g.loss == SNN_LOSS_MSE) {
        const std::vector<float> targets = g.floats("targets");
        ASSERT_EQ(snn_set_targets(bwd, targets.data(), targets.size()), SNN_OK) << snn_last_error();
    } else {
        const std::vector<double> &l = g.arrays.at("labels");
        const std::vector<int32_t> labels(l.begin(), l.end());
        ASSERT_EQ(snn_set_labels(bwd, labels.data(), labels.size()), SNN_OK) << snn_last_error();
    }

    ASSERT_EQ(snn_forward(fwd, model), SNN_OK) << snn_last_error();
    std::vector<float> outputs(g.arrays.at("outputs").size());
    ASSERT_EQ(snn_get_outputs(fwd, outputs.data(), outputs.size()), SNN_OK) << snn_last_error();
    expect_close("outputs", outputs, g.arrays.at("outputs"), kRel, abs_tol);

    float loss = 0.0f;
    ASSERT_EQ(snn_backprop(bwd, fwd, model, g.loss, &loss), SNN_OK) << snn_last_error();
    expect_close("loss", {loss}, g.arrays.at("loss_value"), kRel, abs_tol);

    std::vector<float> grads(params.size());
    ASSERT_EQ(snn_get_gradients(bwd, grads.data(), grads.size()), SNN_OK);
    expect_close("gradients", grads, g.arrays.at("gradients"), kRel, abs_tol);

    std::vector<float> input_grads(inputs.size());
    ASSERT_EQ(snn_get_input_gradients(bwd, input_grads.data(), input_grads.size()), SNN_OK)
        << snn_last_error();
    expect_close("input gradients", input_grads, g.arrays.at("input_gradients"), kRel, abs_tol);

    ASSERT_EQ(snn_optimiser_create(model, g.optimiser, &opt), SNN_OK);
    for (const auto &[which, value] : g.hyperparameters)
        ASSERT_EQ(snn_optimiser_set(opt, which, value), SNN_OK) << snn_last_error();
    for (int step = 0; step < kSteps; ++step) {
        if (step > 0) {
            ASSERT_EQ(snn_forward(fwd, model), SNN_OK);
            ASSERT_EQ(snn_backprop(bwd, fwd, model, g.loss, nullptr), SNN_OK);
        }
        ASSERT_EQ(snn_optimiser_step(opt, model, bwd), SNN_OK) << snn_last_error();
    }
    std::vector<float> after(params.size());
    ASSERT_EQ(snn_get_parameters(model, after.data(), after.size()), SNN_OK);
    expect_close("params after steps", after, g.arrays.at("params_after_steps"), kStepsRel,
                 kStepsAbs);

    snn_optimiser_destroy(opt);
    snn_backward_cache_destroy(bwd);
    snn_forward_cache_destroy(fwd);
    snn_model_destroy(model);
}

std::vector<std::string> case_names() {
    std::vector<std::string> names;
    for (const auto &entry : std::filesystem::directory_iterator(g_data_dir))
        if (entry.path().extension() == ".golden") names.push_back(entry.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

INSTANTIATE_TEST_SUITE_P(PyTorch, Golden, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

// Guards against a data directory that silently lost its cases.
TEST(GoldenData, HoldsEveryCase) { EXPECT_GE(case_names().size(), 33u); }

}  // namespace

int main(int argc, char **argv) {
    // The cases are listed while gtest parses its flags, so the directory
    // must be known first: it is the one argument that is not a gtest flag.
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind("--gtest", 0) != 0) g_data_dir = argv[i];
    if (g_data_dir.empty()) {
        std::fprintf(stderr, "usage: %s <golden data directory> [gtest flags]\n", argv[0]);
        return 2;
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
