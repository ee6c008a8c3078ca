// The golden cases of data/ (written by generate.py from PyTorch): reading
// a case, replaying it through the C API on a device, and comparing values
// element by element. Shared by the CPU test (test_golden.cpp) and the GPU
// suite (tests/gpu/test_gpu_golden.cpp).
#pragma once

#include <snn.h>

#include "../common/handles.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace golden {

// Optimiser steps taken by a case that does not say.
constexpr int kSteps = 5;

struct GoldenCase {
    std::string spec;
    snn_loss loss = 0;
    // "loss huber delta=0.5": the loss's parameter, set before backprop.
    bool has_loss_parameter = false;
    double loss_parameter = 0.0;
    snn_optimiser_kind optimiser = 0;
    std::vector<std::pair<snn_hyperparameter, double>> hyperparameters;
    int64_t batch = 0;
    bool training = true;  // the forward cache's mode ("mode train" or "mode eval")
    int steps = kSteps;
    double abs_tolerance = 1.0;  // a case's own, stricter absolute tolerance
    // Stricter ones still for single arrays ("tolerance_outputs 1e-20").
    std::map<std::string, double> array_abs_tolerance;
    // Arrays whose elements are sums that cancel ("cancellation_gradients
    // 1e-06"): an element is also accepted within that fraction of the
    // array's largest value (a float32 sum that cancels keeps its error
    // relative to its terms, not to itself).
    std::map<std::string, double> array_cancellation;
    // params, inputs, targets or labels, outputs, loss_value, gradients,
    // input_gradients, params_after_steps; state and state_after_steps where
    // the model has state.
    std::map<std::string, std::vector<double>> arrays;

    // The absolute tolerance for array `name`: `abs`, or the case's own where
    // stricter.
    double abs_tolerance_of(const std::string &name, double abs) const {
        const auto strict = array_abs_tolerance.find(name);
        abs = std::min(abs, abs_tolerance);
        abs = strict == array_abs_tolerance.end() ? abs : std::min(abs, strict->second);
        const auto cancels = array_cancellation.find(name);
        if (cancels != array_cancellation.end() && arrays.count(name)) {
            double largest = 0.0;
            for (double v : arrays.at(name)) largest = std::max(largest, std::fabs(v));
            abs = std::max(abs, cancels->second * largest);
        }
        return abs;
    }

    std::vector<float> floats(const std::string &name) const {
        const std::vector<double> &v = arrays.at(name);
        return std::vector<float>(v.begin(), v.end());
    }
};

inline snn_hyperparameter hyperparameter_named(const std::string &name) {
    static const std::map<std::string, snn_hyperparameter> names = {
        {"lr", SNN_HP_LEARNING_RATE}, {"momentum", SNN_HP_MOMENTUM},
        {"nesterov", SNN_HP_NESTEROV}, {"weight_decay", SNN_HP_WEIGHT_DECAY},
        {"alpha", SNN_HP_ALPHA},       {"epsilon", SNN_HP_EPSILON},
        {"beta1", SNN_HP_BETA1},       {"beta2", SNN_HP_BETA2},
        {"dampening", SNN_HP_DAMPENING},
        {"max_grad_norm", SNN_HP_MAX_GRAD_NORM}};
    return names.at(name);
}

inline snn_optimiser_kind optimiser_named(const std::string &name) {
    static const std::map<std::string, snn_optimiser_kind> names = {
        {"sgd", SNN_OPTIMISER_SGD},
        {"adam", SNN_OPTIMISER_ADAM},
        {"adamw", SNN_OPTIMISER_ADAMW},
        {"rmsprop", SNN_OPTIMISER_RMSPROP},
        {"lion", SNN_OPTIMISER_LION}};
    return names.at(name);
}

// Reads the format described in generate.py; throws std::runtime_error for
// a file that cannot be read or parsed.
inline GoldenCase read_case(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    GoldenCase c;
    std::string key;
    while (in >> key) {
        if (key == "spec") {
            std::getline(in >> std::ws, c.spec);
        } else if (key == "loss") {
            std::string line, name, option;
            std::getline(in, line);
            std::istringstream words(line);
            words >> name;
            static const std::map<std::string, snn_loss> losses = {
                {"mse", SNN_LOSS_MSE}, {"xent", SNN_LOSS_LOGIT_CROSSENTROPY}, {"huber", SNN_LOSS_HUBER},
                {"smooth_l1", SNN_LOSS_SMOOTH_L1},
                {"bce", SNN_LOSS_BCE_WITH_LOGITS}};
            c.loss = losses.at(name);
            if (words >> option) {
                c.has_loss_parameter = true;
                c.loss_parameter = std::stod(option.substr(option.find('=') + 1));
            }
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
        } else if (key == "mode") {
            std::string mode;
            in >> mode;
            if (mode != "train" && mode != "eval")
                throw std::runtime_error(path + ": unknown mode " + mode);
            c.training = mode == "train";
        } else if (key == "steps") {
            in >> c.steps;
        } else if (key == "tolerance") {
            in >> c.abs_tolerance;
        } else if (key.rfind("tolerance_", 0) == 0) {
            in >> c.array_abs_tolerance[key.substr(10)];
        } else if (key.rfind("cancellation_", 0) == 0) {
            in >> c.array_cancellation[key.substr(13)];
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

// The names (file stems) of the cases in `dir`, sorted.
inline std::vector<std::string> case_names(const std::string &dir) {
    std::vector<std::string> names;
    for (const auto &entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".golden") names.push_back(entry.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

// What snn computes for a case: the forward outputs, the loss, the gradient
// of every parameter and of the inputs, and the parameters and the state
// (where the case has any) after its optimiser steps on the same batch,
// each step after a forward and backward pass of its own (the first step's
// being the pass that gave the outputs and gradients).
struct Replay {
    std::vector<float> outputs, gradients, input_gradients, params_after_steps, state_after_steps;
    std::vector<float> grad_norm;  // snn_optimiser_grad_norm after the steps, when they clip
    float loss = 0.0f;
    std::string error;  // the first call that failed, empty if none did
};

// Replays `g` with the model on `device` (SNN_DEVICE_CPU or a GPU index).
inline Replay replay(const GoldenCase &g, int32_t device) {
    Replay r;
    auto ok = [&r](snn_status st, const char *call) {
        if (st != SNN_OK && r.error.empty())
            r.error = std::string(call) + ": " + snn_status_string(st) + ": " + snn_last_error();
        return st == SNN_OK;
    };
#define GOLDEN_CALL(call) \
    if (!ok((call), #call)) return r
    snn_model *raw_model = nullptr;
    GOLDEN_CALL(snn_model_create(g.spec.c_str(), &raw_model));
    snn_handles::Model model(raw_model);
    const std::vector<float> params = g.floats("params");
    GOLDEN_CALL(snn_set_parameters(model.get(), params.data(), params.size()));
    if (g.arrays.count("state")) {
        const std::vector<float> state = g.floats("state");
        GOLDEN_CALL(snn_set_state(model.get(), state.data(), state.size()));
    }
    if (device != SNN_DEVICE_CPU) GOLDEN_CALL(snn_to_gpu(model.get(), device));

    snn_forward_cache *raw_fwd = nullptr;
    snn_backward_cache *raw_bwd = nullptr;
    GOLDEN_CALL(snn_preallocate(model.get(), g.batch, &raw_fwd));
    snn_handles::Forward fwd(raw_fwd);
    if (!g.training) GOLDEN_CALL(snn_cache_set_training(fwd.get(), 0));
    GOLDEN_CALL(snn_preallocate_grads(model.get(), g.batch, &raw_bwd));
    snn_handles::Backward bwd(raw_bwd);
    // Token models: "tokens" (ids) in place of "inputs", and no input
    // gradient (snn_set_input_gradient refuses to ask for one); sequence
    // models may give "lengths".
    const bool tokens = g.arrays.count("tokens") > 0;
    if (!tokens) GOLDEN_CALL(snn_set_input_gradient(bwd.get(), 1));
    std::vector<float> inputs;
    if (tokens) {
        const std::vector<double> &t = g.arrays.at("tokens");
        const std::vector<int32_t> ids(t.begin(), t.end());
        GOLDEN_CALL(snn_set_tokens(fwd.get(), ids.data(), ids.size()));
    } else {
        inputs = g.floats("inputs");
        GOLDEN_CALL(snn_set_inputs(fwd.get(), inputs.data(), inputs.size()));
    }
    if (g.arrays.count("lengths")) {
        const std::vector<double> &l = g.arrays.at("lengths");
        const std::vector<int32_t> lengths(l.begin(), l.end());
        GOLDEN_CALL(snn_set_lengths(fwd.get(), lengths.data(), lengths.size()));
    }
    if (g.has_loss_parameter)
        GOLDEN_CALL(snn_set_loss_parameter(bwd.get(), g.loss, g.loss_parameter));
    if (g.loss != SNN_LOSS_LOGIT_CROSSENTROPY) {
        const std::vector<float> targets = g.floats("targets");
        GOLDEN_CALL(snn_set_targets(bwd.get(), targets.data(), targets.size()));
    } else {
        const std::vector<double> &l = g.arrays.at("labels");
        const std::vector<int32_t> labels(l.begin(), l.end());
        GOLDEN_CALL(snn_set_labels(bwd.get(), labels.data(), labels.size()));
    }

    GOLDEN_CALL(snn_forward(fwd.get(), model.get()));
    r.outputs.resize(g.arrays.at("outputs").size());
    GOLDEN_CALL(snn_get_outputs(fwd.get(), r.outputs.data(), r.outputs.size()));
    GOLDEN_CALL(snn_backprop(bwd.get(), fwd.get(), model.get(), g.loss, &r.loss));
    r.gradients.resize(params.size());
    GOLDEN_CALL(snn_get_gradients(bwd.get(), r.gradients.data(), r.gradients.size()));
    if (!tokens) {
        r.input_gradients.resize(inputs.size());
        GOLDEN_CALL(snn_get_input_gradients(bwd.get(), r.input_gradients.data(),
                                            r.input_gradients.size()));
    }

    snn_optimiser *raw_opt = nullptr;
    GOLDEN_CALL(snn_optimiser_create(model.get(), g.optimiser, &raw_opt));
    snn_handles::Optimiser opt(raw_opt);
    for (const auto &[which, value] : g.hyperparameters)
        GOLDEN_CALL(snn_optimiser_set(opt.get(), which, value));
    for (int step = 0; step < g.steps; ++step) {
        if (step > 0) {
            GOLDEN_CALL(snn_forward(fwd.get(), model.get()));
            GOLDEN_CALL(snn_backprop(bwd.get(), fwd.get(), model.get(), g.loss, nullptr));
        }
        GOLDEN_CALL(snn_optimiser_step(opt.get(), model.get(), bwd.get()));
    }
    r.params_after_steps.resize(params.size());
    GOLDEN_CALL(snn_get_parameters(model.get(), r.params_after_steps.data(),
                                   r.params_after_steps.size()));
    double max_grad_norm = 0.0, grad_norm = 0.0;
    GOLDEN_CALL(snn_optimiser_get(opt.get(), SNN_HP_MAX_GRAD_NORM, &max_grad_norm));
    if (max_grad_norm > 0.0) {
        GOLDEN_CALL(snn_optimiser_grad_norm(opt.get(), &grad_norm));
        r.grad_norm = {float(grad_norm)};
    }
    if (g.arrays.count("state_after_steps")) {
        r.state_after_steps.resize(g.arrays.at("state_after_steps").size());
        GOLDEN_CALL(snn_get_state(model.get(), r.state_after_steps.data(),
                                  r.state_after_steps.size()));
    }
#undef GOLDEN_CALL
    return r;
}

// Largest |actual - expected|, how many elements lie outside
// abs_tol + rel_tol * |expected| (each element against its own value), and
// the element furthest outside (or least inside) its own tolerance.
struct Comparison {
    double max_abs_error = 0.0;
    size_t worst_index = 0;
    size_t failures = 0;
};

inline Comparison compare(const std::vector<float> &actual, const std::vector<double> &expected,
                          double rel_tol, double abs_tol) {
    Comparison c;
    double worst = -1.0;  // error / tolerance of worst_index
    for (size_t i = 0; i < expected.size(); ++i) {
        const double err = std::fabs(double(actual[i]) - expected[i]);
        const double tolerance = abs_tol + rel_tol * std::fabs(expected[i]);
        if (!(err <= tolerance)) ++c.failures;
        if (!(err <= c.max_abs_error)) c.max_abs_error = err;
        const double ratio = err / tolerance;  // NaN where snn gave NaN, which stays the worst
        if (!(worst >= ratio) && !std::isnan(worst)) {
            worst = ratio;
            c.worst_index = i;
        }
    }
    return c;
}

}  // namespace golden
