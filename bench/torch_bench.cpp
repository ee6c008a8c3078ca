// The cases of snn_bench, written with libtorch (PyTorch's C++ API), for
// comparison. Same output, one line per case:
//
//   name median_us allocations
//
// median_us: median over repetitions of one call (a forward pass under
// torch::InferenceMode, or a whole training step: zero_grad, forward, loss,
// backward, optimiser step); allocations: heap allocations per call.
// startup_* cases time building the model and its optimiser, as snn_bench's.
// Modules stay in training mode (libtorch's default), so batchnorm uses the
// batch's statistics and dropout draws a mask at every training step, as in
// snn's training steps.
//
// Threads: SNN_NUM_THREADS (default: all cores) is passed to
// torch::set_num_threads, so both programs run with the same bound.
// With --interop-threads N, torch::set_num_interop_threads(N) is called
// first (one of libtorch's thread settings; OMP_WAIT_POLICY and
// OPENBLAS_NUM_THREADS are the others, read from the environment).
//
// Usage: torch_bench [case ...] [--reps N] [--interop-threads N] | --version
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../tests/core/alloc_counter.h"

namespace {

enum class Net { Tiny, Seed, Mlp, Cnn, DefaultCnn, Resnet };
enum class Loss { None, Mse, CrossEntropy };

struct Case {
    const char *name;
    Net net;
    int64_t batch;
    bool train;
    Loss loss;
    bool startup;
};

const Case cases[] = {
    {"seed_forward", Net::Seed, 128, false, Loss::None, false},
    {"mlp_train_step", Net::Mlp, 64, true, Loss::CrossEntropy, false},
    {"tiny_train_step", Net::Tiny, 32, true, Loss::Mse, false},
    {"tiny_forward", Net::Tiny, 32, false, Loss::None, false},
    {"cnn_train_step", Net::Cnn, 64, true, Loss::CrossEntropy, false},
    {"cnn_inference_1000", Net::Cnn, 1000, false, Loss::None, false},
    {"default_cnn_train_step", Net::DefaultCnn, 64, true, Loss::CrossEntropy, false},
    {"resnet_train_step", Net::Resnet, 64, true, Loss::CrossEntropy, false},
    {"startup_tiny", Net::Tiny, 32, true, Loss::Mse, true},
    {"startup_mlp", Net::Mlp, 64, true, Loss::CrossEntropy, true},
    {"startup_cnn", Net::Cnn, 64, true, Loss::CrossEntropy, true},
};

namespace nn = torch::nn;

// x + body(x): the "add NAME" of a spec, the saved output NAME being x.
struct ResidualImpl : nn::Module {
    explicit ResidualImpl(nn::Sequential b) : body(register_module("body", b)) {}
    torch::Tensor forward(torch::Tensor x) { return x + body->forward(x); }
    nn::Sequential body;
};
TORCH_MODULE(Residual);

nn::Conv2d conv3x3(int64_t in, int64_t out) {
    // conv 3 OUT pad=1 nobias init=he_normal
    nn::Conv2d conv(nn::Conv2dOptions(in, out, 3).padding(1).bias(false));
    torch::NoGradGuard no_grad;
    nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanIn, torch::kReLU);
    return conv;
}

// One stage of FASHION_MNIST_RESNET_SPEC (examples/fashion_mnist/models.h):
//   conv 3 C pad=1 nobias; batchnorm; relu name=s;
//   conv 3 C pad=1 nobias; batchnorm; relu;
//   conv 3 C pad=1 nobias; batchnorm; add s; relu; [maxpool 2]
void add_resnet_stage(nn::Sequential &net, int64_t in, int64_t out, bool pool) {
    net->push_back(conv3x3(in, out));
    net->push_back(nn::BatchNorm2d(out));
    net->push_back(nn::ReLU());
    net->push_back(Residual(nn::Sequential(conv3x3(out, out), nn::BatchNorm2d(out), nn::ReLU(),
                                           conv3x3(out, out), nn::BatchNorm2d(out))));
    net->push_back(nn::ReLU());
    if (pool) net->push_back(nn::MaxPool2d(2));
}

// The networks of snn_bench's specs, layer for layer.
nn::Sequential make_net(Net net) {
    switch (net) {
    case Net::Tiny: // input 4; dense 32 tanh; dense 16 tanh; dense 4
        return nn::Sequential(nn::Linear(4, 32), nn::Tanh(), nn::Linear(32, 16), nn::Tanh(),
                              nn::Linear(16, 4));
    case Net::Seed: // input 100; dense 200 relu; dense 1
        return nn::Sequential(nn::Linear(100, 200), nn::ReLU(), nn::Linear(200, 1));
    case Net::Mlp: // input 784; dense 128 relu; dense 64 relu; dense 10
        return nn::Sequential(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 64), nn::ReLU(),
                              nn::Linear(64, 10));
    case Net::Cnn:
        // input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4;
        // flatten; dense 10.  28 -> 24 -> 12 -> 10 -> 2: 8*2*2 = 32 features.
        return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 16, 5)), nn::ReLU(),
                              nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(16, 8, 3)),
                              nn::ReLU(), nn::MaxPool2d(4), nn::Flatten(), nn::Linear(32, 10));
    case Net::DefaultCnn:
        // input 28x28x1; conv 3x3 32 relu pad=1; maxpool 2; conv 3x3 64 relu pad=1;
        // maxpool 2; flatten; dense 128 relu; dense 10.  28 -> 14 -> 7: 64*7*7.
        return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                              nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                              nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                              nn::Linear(64 * 7 * 7, 128), nn::ReLU(), nn::Linear(128, 10));
    case Net::Resnet: {
        // Three stages: 16, 32 and 64 channels at 28x28, 14x14 and 7x7;
        // flatten; dropout 0.4; dense 10.
        nn::Sequential seq;
        add_resnet_stage(seq, 1, 16, true);
        add_resnet_stage(seq, 16, 32, true);
        add_resnet_stage(seq, 32, 64, false);
        seq->push_back(nn::Flatten());
        seq->push_back(nn::Dropout(0.4));
        seq->push_back(nn::Linear(64 * 7 * 7, 10));
        return seq;
    }
    }
    return nullptr;
}

std::vector<int64_t> input_shape(Net net, int64_t batch) {
    switch (net) {
    case Net::Tiny: return {batch, 4};
    case Net::Seed: return {batch, 100};
    case Net::Mlp: return {batch, 784};
    case Net::Cnn:
    case Net::DefaultCnn:
    case Net::Resnet: return {batch, 1, 28, 28};
    }
    return {};
}

int64_t output_size(Net net) {
    switch (net) {
    case Net::Tiny: return 4;
    case Net::Seed: return 1;
    default: return 10;
    }
}

double now_us() {
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

// Inputs, targets and labels filled as snn_bench fills them.
torch::Tensor filled_inputs(Net net, int64_t batch) {
    torch::Tensor x = torch::empty(input_shape(net, batch));
    float *p = x.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i)
        p[i] = (float)((uint64_t)i * 2654435761u % 1000) / 1000.0f;
    return x;
}

void print_line(const char *name, std::vector<double> &times, size_t allocations) {
    std::sort(times.begin(), times.end());
    std::printf("%s %.2f %.2f\n", name, times[times.size() / 2],
                (double)allocations / (double)times.size());
    std::fflush(stdout);
}

// Times `call` reps times after a warm-up of reps/10 + 3 calls, as snn_bench.
void time_calls(const char *name, int reps, const std::function<void()> &call) {
    std::vector<double> times((size_t)reps);
    for (int r = -reps / 10 - 3; r < 0; ++r) call();
    alloc_counter_start();
    for (int r = 0; r < reps; ++r) {
        double t0 = now_us();
        call();
        times[(size_t)r] = now_us() - t0;
    }
    size_t allocations = alloc_counter_stop();
    print_line(name, times, allocations);
}

void run(const Case &c, int reps) {
    if (c.startup) {
        // Model creation and the optimiser (libtorch allocates the rest of
        // its buffers lazily, during the first steps).
        std::vector<double> times((size_t)reps);
        alloc_counter_start();
        for (int r = 0; r < reps; ++r) {
            double t0 = now_us();
            nn::Sequential net = make_net(c.net);
            torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
            times[(size_t)r] = now_us() - t0;
        }
        size_t allocations = alloc_counter_stop();
        print_line(c.name, times, allocations);
        return;
    }
    torch::manual_seed(0);
    nn::Sequential net = make_net(c.net);
    torch::Tensor x = filled_inputs(c.net, c.batch);
    int64_t outputs = output_size(c.net);
    if (!c.train) {
        torch::InferenceMode guard;
        torch::Tensor y;
        time_calls(c.name, reps, [&] { y = net->forward(x); });
        return;
    }
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
    if (c.loss == Loss::Mse) {
        torch::Tensor t = torch::empty({c.batch, outputs});
        float *p = t.data_ptr<float>();
        for (int64_t i = 0; i < t.numel(); ++i)
            p[i] = (float)((uint64_t)i * 40503u % 100) / 100.0f;
        time_calls(c.name, reps, [&] {
            opt.zero_grad();
            torch::Tensor loss = torch::mse_loss(net->forward(x), t);
            loss.backward();
            opt.step();
        });
    } else {
        torch::Tensor labels = torch::arange(c.batch, torch::kLong).remainder(outputs);
        time_calls(c.name, reps, [&] {
            opt.zero_grad();
            torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), labels);
            loss.backward();
            opt.step();
        });
    }
}

} // namespace

int main(int argc, char **argv) {
    int reps = 0;
    int interop = 0;
    std::vector<std::string> only;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--version") == 0) {
            std::printf("libtorch %s\n", TORCH_VERSION);
            return 0;
        }
        if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::atoi(argv[++i]);
        else if (std::strcmp(argv[i], "--interop-threads") == 0 && i + 1 < argc)
            interop = std::atoi(argv[++i]);
        else only.emplace_back(argv[i]);
    }
    if (interop > 0) torch::set_num_interop_threads(interop);
    const char *env = std::getenv("SNN_NUM_THREADS");
    int threads = env ? std::atoi(env) : (int)std::thread::hardware_concurrency();
    torch::set_num_threads(threads > 0 ? threads : 1);
    for (const Case &c : cases) {
        bool wanted = only.empty() || std::find(only.begin(), only.end(), c.name) != only.end();
        if (!wanted) continue;
        // As snn_bench: training cases stay below the steps where Adam's
        // moments of always-zero gradients turn subnormal.
        int r = reps > 0 ? reps
                : c.startup ? 200
                : c.batch >= 1000 || std::strstr(c.name, "cnn") || std::strstr(c.name, "resnet") ? 50
                : c.train ? 500
                : 2000;
        run(c, r);
    }
    return 0;
}
