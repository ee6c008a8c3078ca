// Every optimiser on the GPU against the CPU backend: five steps of
// forward, backprop and update from identical parameters and data; the
// parameters must stay together after each step.
#include "gpu_test.h"

using namespace gpu_test;

namespace {

struct Setting {
    snn_hyperparameter which;
    double value;
};

struct Case {
    const char *what;
    snn_optimiser_kind kind;
    std::vector<Setting> settings;
};

// A network whose gradients have no exact zeros (tanh), so that rules which
// normalise by the gradient's size (Adam, RMSProp) compare well.
const char *kSpec = "input 10; dense 12 tanh; dense 8 sigmoid; dense 4";

void compare(const Case &c, int32_t device) {
    const int64_t batch = 6;
    Model cpu = make_model(kSpec, 3);
    Model gpu = make_model(kSpec, 3);
    move_to(gpu.get(), device);
    Forward cpu_f = make_forward(cpu.get(), batch), gpu_f = make_forward(gpu.get(), batch);
    Backward cpu_b = make_backward(cpu.get(), batch), gpu_b = make_backward(gpu.get(), batch);
    Optimiser cpu_o = make_optimiser(cpu.get(), c.kind), gpu_o = make_optimiser(gpu.get(), c.kind);
    for (const Setting &s : c.settings) {
        CHECK_OK(snn_optimiser_set(cpu_o.get(), s.which, s.value));
        CHECK_OK(snn_optimiser_set(gpu_o.get(), s.which, s.value));
    }
    Random rng(17);
    const size_t in = input_size(cpu.get()), out = output_size(cpu.get());
    std::vector<float> x = rng.floats(size_t(batch) * in, -1.0f, 1.0f);
    std::vector<float> t = rng.floats(size_t(batch) * out, -1.0f, 1.0f);

    snn_model *models[2] = {cpu.get(), gpu.get()};
    snn_forward_cache *fs[2] = {cpu_f.get(), gpu_f.get()};
    snn_backward_cache *bs[2] = {cpu_b.get(), gpu_b.get()};
    snn_optimiser *os[2] = {cpu_o.get(), gpu_o.get()};
    for (int step = 1; step <= 5; ++step) {
        for (int side = 0; side < 2; ++side) {
            CHECK_OK(snn_set_inputs(fs[side], x.data(), x.size()));
            CHECK_OK(snn_forward(fs[side], models[side]));
            CHECK_OK(snn_set_targets(bs[side], t.data(), t.size()));
            CHECK_OK(snn_backprop(bs[side], fs[side], models[side], SNN_LOSS_MSE, nullptr));
            CHECK_OK(snn_optimiser_step(os[side], models[side], bs[side]));
        }
        std::string label = std::string(c.what) + ", step " + std::to_string(step);
        close(label.c_str(), parameters(gpu.get()), parameters(cpu.get()), 1e-4f, 1e-6f);
        double clip = 0.0, norms[2] = {0.0, 0.0};
        CHECK_OK(snn_optimiser_get(cpu_o.get(), SNN_HP_MAX_GRAD_NORM, &clip));
        if (clip > 0.0) {
            CHECK_OK(snn_optimiser_grad_norm(cpu_o.get(), &norms[0]));
            CHECK_OK(snn_optimiser_grad_norm(gpu_o.get(), &norms[1]));
            close((label + ", gradient norm").c_str(), {float(norms[1])}, {float(norms[0])}, 1e-5f, 0.0f);
        }
    }
    int64_t steps = 0;
    CHECK_OK(snn_optimiser_step_count(gpu_o.get(), &steps));
    CHECK(steps == 5);
}

}  // namespace

int main() {
    const int32_t device = test_device();
    const Case cases[] = {
        {"sgd", SNN_OPTIMISER_SGD, {{SNN_HP_LEARNING_RATE, 0.1}}},
        {"sgd with momentum and weight decay",
         SNN_OPTIMISER_SGD,
         {{SNN_HP_LEARNING_RATE, 0.05}, {SNN_HP_MOMENTUM, 0.9}, {SNN_HP_WEIGHT_DECAY, 1e-3}}},
        {"sgd with Nesterov momentum",
         SNN_OPTIMISER_SGD,
         {{SNN_HP_LEARNING_RATE, 0.05}, {SNN_HP_MOMENTUM, 0.8}, {SNN_HP_NESTEROV, 1}}},
        {"sgd with dampening",
         SNN_OPTIMISER_SGD,
         {{SNN_HP_LEARNING_RATE, 0.05}, {SNN_HP_MOMENTUM, 0.9}, {SNN_HP_DAMPENING, 0.5}}},
        {"adam", SNN_OPTIMISER_ADAM, {{SNN_HP_LEARNING_RATE, 0.01}}},
        {"adam with L2 weight decay",
         SNN_OPTIMISER_ADAM,
         {{SNN_HP_LEARNING_RATE, 0.01}, {SNN_HP_WEIGHT_DECAY, 0.01}}},
        {"adamw", SNN_OPTIMISER_ADAMW, {{SNN_HP_LEARNING_RATE, 0.01}, {SNN_HP_WEIGHT_DECAY, 0.1}}},
        {"rmsprop", SNN_OPTIMISER_RMSPROP, {{SNN_HP_LEARNING_RATE, 0.01}, {SNN_HP_ALPHA, 0.9}}},
        {"rmsprop with weight decay",
         SNN_OPTIMISER_RMSPROP,
         {{SNN_HP_LEARNING_RATE, 0.01}, {SNN_HP_WEIGHT_DECAY, 1e-3}}},
        {"lion", SNN_OPTIMISER_LION, {{SNN_HP_LEARNING_RATE, 1e-3}}},
        {"sgd with momentum, clipped", SNN_OPTIMISER_SGD,
         {{SNN_HP_LEARNING_RATE, 0.1}, {SNN_HP_MOMENTUM, 0.9}, {SNN_HP_MAX_GRAD_NORM, 0.05}}},
        {"adam, clipped", SNN_OPTIMISER_ADAM, {{SNN_HP_LEARNING_RATE, 0.01}, {SNN_HP_MAX_GRAD_NORM, 0.05}}},
        {"lion, clipped", SNN_OPTIMISER_LION, {{SNN_HP_LEARNING_RATE, 1e-3}, {SNN_HP_MAX_GRAD_NORM, 0.05}}},
        {"rmsprop, clipped above its norm", SNN_OPTIMISER_RMSPROP,
         {{SNN_HP_LEARNING_RATE, 0.01}, {SNN_HP_MAX_GRAD_NORM, 1e6}}},
        {"lion with weight decay and betas near 1",
         SNN_OPTIMISER_LION,
         {{SNN_HP_LEARNING_RATE, 1e-3}, {SNN_HP_WEIGHT_DECAY, 0.5}, {SNN_HP_BETA1, 0.99999},
          {SNN_HP_BETA2, 0.999999}}},
    };
    for (const Case &c : cases) compare(c, device);
    return finish("gpu optimisers");
}
