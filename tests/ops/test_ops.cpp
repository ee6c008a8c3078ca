// The op harness: every case of op_cases.h (each op of SNN_OP_LIST with one
// option set) in every mode, as tests named <op>/Op.<Mode>/<label>:
//
//   GradientTraining, GradientInference  the gradients of every parameter and
//       input against central differences of the loss (recomputed in double
//       from snn's outputs), with the forward cache in that mode; the state
//       and dropout's seed are set again before every pass, so the loss is a
//       function of the parameters and inputs alone;
//   Golden    the case's PyTorch float64 golden files replayed through the C
//       API (tests/golden/golden_check.h), each of whose specs holds the op;
//   Gpu       every node of the case run through its kernel tables on the CPU
//       and on the GPU backend from the same inputs, parameters and state,
//       forward then backward, in both modes; skipped, saying why, without
//       a GPU. Built with -DSNN_CUDA_EMULATED (suite gpu-emulated), the GPU
//       is the CUDA plugin's kernels compiled for the host (cuda/emulation);
//   SpecRoundTrip  the canonical text parses back to itself, with the same
//       shapes, parameter and state layout, and the spec holds the op;
//   FileRoundTrip  save and load: bit-identical parameters, state and
//       outputs in both modes;
//   Bf16      the training step at bf16 against float32, and the native bf16
//       kernels against the emulated path (see its section).
//
// The kernel-path cases (op_cases.h) run in the Gpu mode alone, as tests
// named <op>/KernelPath.Gpu/<label>: each node twice on a GPU, under the
// emulation's three thread orders on the emulated one, bit-identical.
//
// `test_ops --time [--repeats=N] [--batch=N]` instead prints, per case, the
// median microseconds of a forward and a backward pass (no test runs, no
// speed is asserted).
#include <gtest/gtest.h>
#include <snn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "../golden/golden_check.h"
#include "../unit/helpers.h"
#include "common/error.h"
#include "cpu/conv_paths.h"
#include "cpu/cpu_backend.h"
#include "cpu/kernel_choice.h"
#include "device/devices.h"
#include "core/math.h"
#include "ops/dims.h"
#include "ops/spec.h"
#include "op_cases.h"
#include "ops/op.h"
#ifdef SNN_CUDA_EMULATED
#include <cuda_runtime.h>

#include "cuda_backend.h"
#endif

namespace op_harness {

// How gtest names a case in its messages (found by argument-dependent lookup).
void PrintTo(const OpCase &c, std::ostream *os) {
    *os << snn::op_desc(c.op).name << "/" << c.label << ": \"" << c.spec << "\" batch " << c.batch;
}
void PrintTo(const KernelPathCase &c, std::ostream *os) {
    *os << snn::op_desc(c.op).name << "/" << c.label << ": \"" << c.spec << "\" batch " << c.batch;
}

namespace {

using namespace snn_test;
using Floats = std::vector<float>;

std::string g_golden_dir;

std::vector<OpCase> cases_of(OpKind op) {
    std::vector<OpCase> v;
    for (const OpCase &c : kCases)
        if (c.op == op) v.push_back(c);
    return v;
}

const char *op_name(OpKind op) { return snn::op_desc(op).name; }

bool same_bits(const Floats &a, const Floats &b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Parameters, gradients and state of a model that may have none (the C API
// refuses a null pointer for parameters even with a count of 0).
Floats params_of(const snn_model *m) { return param_count(m) ? get_params(m) : Floats(); }
Floats grads_of(const snn_backward_cache *b, const snn_model *m) {
    return param_count(m) ? gradients(b, m) : Floats();
}
snn_status set_params(snn_model *m, const Floats &p) {
    return p.empty() ? SNN_OK : snn_set_parameters(m, p.data(), p.size());
}

// A model of the case with parameters and state away from their initial
// values (norm weights 1, biases 0, running statistics 0 and 1), so that
// each one's role is checked; num_batches_tracked, the last value of a
// layer's state, is a count.
struct Prepared {
    Model model;
    Floats params, state;
};

Prepared make_setup(const OpCase &c, Random &rng) {
    Prepared s{make_model(c.spec), {}, {}};
    s.params = params_of(s.model.get());
    for (float &v : s.params) v += rng.uniform(-0.2f, 0.2f);
    EXPECT_EQ(set_params(s.model.get(), s.params), SNN_OK);
    size_t state_count = 0;
    EXPECT_EQ(snn_state_count(s.model.get(), &state_count), SNN_OK);
    s.state = rng.uniform_vector(state_count, 0.5f, 1.5f);
    int64_t layers = 0;
    EXPECT_EQ(snn_model_layer_count(s.model.get(), &layers), SNN_OK);
    for (int64_t l = 1; l < layers; ++l) {
        size_t offset = 0, count = 0;
        EXPECT_EQ(snn_model_layer_state(s.model.get(), l, &offset, &count), SNN_OK);
        if (count) s.state[offset + count - 1] = 3.0f;
    }
    EXPECT_EQ(snn_set_state(s.model.get(), s.state.data(), s.state.size()), SNN_OK);
    return s;
}

// What a case feeds its model for a batch of n: float inputs or token ids
// (integers in [0, vocab)), the lengths of a sequence model (the case's, or
// none), and targets and labels for its loss: one label per sample, or per
// step of a sequence output (some -1: ignored).
struct Feed {
    bool tokens = false;
    Floats x;
    std::vector<int32_t> ids, lengths, labels;
    Floats targets;
    size_t k = 0;           // outputs per row: per sample, or per step of a sequence
    int64_t out_steps = 1;  // rows per sample of the output
    bool sequence_output = false;
};

std::vector<int32_t> parse_lengths(const char *text) {
    std::vector<int32_t> v;
    for (const char *p = text; p && *p;) {
        char *end = nullptr;
        v.push_back(int32_t(std::strtol(p, &end, 10)));
        p = *end == ',' ? end + 1 : end;
    }
    return v;
}

Feed make_feed(const OpCase &c, const snn_model *model, int64_t n, Random &rng) {
    Feed f;
    int64_t steps = 0, vocab = 0;
    EXPECT_EQ(snn_model_input_sequence(model, &steps, &vocab), SNN_OK);
    const snn::Network net = snn::parse_spec(c.spec);
    const snn::Shape &out = net.output();
    f.sequence_output = out.is_seq;
    f.out_steps = out.steps();
    f.k = size_t(out.row_size());
    f.tokens = vocab > 0;
    const size_t features = input_size(model);
    if (f.tokens) {
        f.ids.resize(size_t(n) * features);
        for (int32_t &id : f.ids) id = int32_t(rng.uniform(0.0f, float(vocab) - 0.01f));
    } else {
        f.x = rng.uniform_vector(size_t(n) * features, -1.0f, 1.0f);
    }
    if (c.lengths) {  // a batch other than the case's (timing) repeats them
        const std::vector<int32_t> given = parse_lengths(c.lengths);
        if (n == c.batch) {
            EXPECT_EQ(int64_t(given.size()), n) << "the case's lengths must give one per sample";
        }
        for (int64_t i = 0; i < n; ++i) f.lengths.push_back(given[size_t(i) % given.size()]);
    }
    f.targets = rng.uniform_vector(size_t(n) * f.k * size_t(f.out_steps), -1.0f, 1.0f);
    f.labels.resize(size_t(n) * size_t(f.out_steps));
    for (size_t i = 0; i < f.labels.size(); ++i)
        f.labels[i] = f.sequence_output && i % 5 == 3 ? -1 : int32_t((i * 7 + 1) % f.k);
    return f;
}

// Sets the feed's inputs (and lengths) on the cache.
void set_feed(snn_forward_cache *fwd, const Feed &f) {
    if (f.tokens) {
        EXPECT_EQ(snn_set_tokens(fwd, f.ids.data(), f.ids.size()), SNN_OK) << snn_last_error();
    } else {
        EXPECT_EQ(snn_set_inputs(fwd, f.x.data(), f.x.size()), SNN_OK) << snn_last_error();
    }
    if (!f.lengths.empty()) {
        EXPECT_EQ(snn_set_lengths(fwd, f.lengths.data(), f.lengths.size()), SNN_OK) << snn_last_error();
    }
}

void set_loss_inputs(snn_backward_cache *bwd, const OpCase &c, const Feed &f) {
    if (c.loss == SNN_LOSS_MSE) {
        EXPECT_EQ(snn_set_targets(bwd, f.targets.data(), f.targets.size()), SNN_OK) << snn_last_error();
    } else {
        EXPECT_EQ(snn_set_labels(bwd, f.labels.data(), f.labels.size()), SNN_OK) << snn_last_error();
    }
}

Floats run_feed(snn_forward_cache *fwd, const snn_model *model, const Feed &f) {
    set_feed(fwd, f);
    EXPECT_EQ(snn_forward(fwd, model), SNN_OK) << snn_last_error();
    int64_t batch = 0, max_batch = 0;
    EXPECT_EQ(snn_cache_batch(fwd, &batch, &max_batch), SNN_OK);
    Floats y(size_t(batch) * output_size(model));
    EXPECT_EQ(snn_get_outputs(fwd, y.data(), y.size()), SNN_OK) << snn_last_error();
    return y;
}

// The loss of the case recomputed in double from the outputs: mean squared
// error over every value, or cross-entropy over the rows that count (a
// sequence's steps labelled -1 and padded steps left out).
double loss_of(const OpCase &c, const Floats &y, const Feed &f) {
    double sum = 0.0;
    if (c.loss == SNN_LOSS_MSE) {
        for (size_t i = 0; i < y.size(); ++i)
            sum += (double(y[i]) - f.targets[i]) * (double(y[i]) - f.targets[i]);
        return sum / double(y.size());
    }
    const size_t k = f.k, rows = y.size() / k;
    size_t counted = 0;
    for (size_t i = 0; i < rows; ++i) {
        const int32_t label = f.labels[i];
        const size_t sample = i / size_t(f.out_steps), step = i % size_t(f.out_steps);
        if (label < 0 || (!f.lengths.empty() && f.sequence_output && step >= size_t(f.lengths[sample]))) continue;
        const float *row = y.data() + i * k;
        const double m = *std::max_element(row, row + k);
        double s = 0.0;
        for (size_t j = 0; j < k; ++j) s += std::exp(row[j] - m);
        sum += m + std::log(s) - row[label];
        ++counted;
    }
    return counted ? sum / double(counted) : 0.0;
}

class Op : public ::testing::TestWithParam<OpCase> {
protected:
    void gradient_check(bool training);
};

void Op::gradient_check(bool training) {
    const OpCase &c = GetParam();
    Random rng(42);
    Prepared s = make_setup(c, rng);
    snn_model *model = s.model.get();
    Feed f = make_feed(c, model, c.batch, rng);

    Forward fwd = make_forward(model, c.batch);
    Backward bwd = make_backward(model, c.batch);
    ASSERT_EQ(snn_cache_set_training(fwd.get(), training ? 1 : 0), SNN_OK);
    if (!f.tokens) {
        ASSERT_EQ(snn_set_input_gradient(bwd.get(), 1), SNN_OK);
    }
    set_loss_inputs(bwd.get(), c, f);

    auto outputs = [&]() {
        EXPECT_EQ(set_params(model, s.params), SNN_OK);
        EXPECT_EQ(snn_set_state(model, s.state.data(), s.state.size()), SNN_OK);
        EXPECT_EQ(snn_cache_set_seed(fwd.get(), 5), SNN_OK);
        return run_feed(fwd.get(), model, f);
    };
    const Floats y = outputs();
    float loss = 0.0f;
    ASSERT_EQ(snn_backprop(bwd.get(), fwd.get(), model, c.loss, &loss), SNN_OK) << snn_last_error();
    EXPECT_NEAR(loss, loss_of(c, y, f), 1e-6 * (1.0 + std::fabs(loss)));
    const Floats grads = grads_of(bwd.get(), model);
    Floats input_grads(f.x.size());
    if (!f.tokens) {
        ASSERT_EQ(snn_get_input_gradients(bwd.get(), input_grads.data(), input_grads.size()), SNN_OK);
    }

    double worst = 0.0;
    auto loss_at = [&]() { return loss_of(c, outputs(), f); };
    // The step actually taken in float, so that rounding of p +- eps is not
    // an error of the quotient.
    auto central = [&](float &v) {
        const float saved = v, up_at = saved + c.eps, down_at = saved - c.eps;
        v = up_at;
        const double up = loss_at();
        v = down_at;
        const double down = loss_at();
        v = saved;
        return (up - down) / (double(up_at) - double(down_at));
    };
    for (size_t i = 0; i < s.params.size(); ++i)
        worst = std::max(worst, expect_gradient_close("parameter", i, central(s.params[i]), grads[i]));
    for (size_t i = 0; i < f.x.size(); ++i)
        worst = std::max(worst, expect_gradient_close("input", i, central(f.x[i]), input_grads[i]));
    std::printf("  %zu parameters, %zu inputs%s: worst error %.2f of the tolerance\n", s.params.size(), f.x.size(),
                f.tokens ? " (token ids: no input gradient)" : "", worst);
}

TEST_P(Op, GradientTraining) { gradient_check(true); }
TEST_P(Op, GradientInference) { gradient_check(false); }

TEST_P(Op, Golden) {
    const OpCase &c = GetParam();
    for (const char *name : c.goldens) {
        if (name == nullptr) break;
        SCOPED_TRACE(name);
        const golden::GoldenCase g = golden::read_case(g_golden_dir + "/" + name + ".golden");
        std::printf("  %s: %s\n", name, g.spec.c_str());
        const snn::Network net = snn::parse_spec(g.spec);
        EXPECT_TRUE(std::any_of(net.layers.begin(), net.layers.end(),
                                [&](const snn::Layer &l) { return l.kind == c.op; }))
            << name << " does not hold a " << op_name(c.op) << " layer";
        golden::expect_matches_pytorch(g, golden::replay(g, SNN_DEVICE_CPU));
    }
}

TEST_P(Op, SpecRoundTrip) {
    const OpCase &c = GetParam();
    const snn::Network net = snn::parse_spec(c.spec);
    EXPECT_TRUE(std::any_of(net.layers.begin(), net.layers.end(),
                            [&](const snn::Layer &l) { return l.kind == c.op; }))
        << "the spec has no " << op_name(c.op) << " layer";
    Model first = make_model(c.spec);
    const std::string text = describe(first.get());
    Model again = make_model(text);
    EXPECT_EQ(describe(again.get()), text);
    EXPECT_EQ(param_count(again.get()), param_count(first.get()));
    EXPECT_EQ(get_state(again.get()).size(), get_state(first.get()).size());
    EXPECT_EQ(input_size(again.get()), input_size(first.get()));
    EXPECT_EQ(output_size(again.get()), output_size(first.get()));
    int64_t layers = 0, layers_again = 0;
    ASSERT_EQ(snn_model_layer_count(first.get(), &layers), SNN_OK);
    ASSERT_EQ(snn_model_layer_count(again.get(), &layers_again), SNN_OK);
    ASSERT_EQ(layers_again, layers);
    EXPECT_EQ(size_t(layers), net.layers.size());
    for (int64_t l = 0; l < layers; ++l) {
        int64_t shape[2][3];
        size_t where[2][6];
        const snn_model *models[2] = {first.get(), again.get()};
        for (int m = 0; m < 2; ++m) {
            ASSERT_EQ(snn_model_layer_shape(models[m], l, &shape[m][0], &shape[m][1], &shape[m][2]), SNN_OK);
            ASSERT_EQ(snn_model_layer_params(models[m], l, &where[m][0], &where[m][1], &where[m][2], &where[m][3]),
                      SNN_OK);
            ASSERT_EQ(snn_model_layer_state(models[m], l, &where[m][4], &where[m][5]), SNN_OK);
        }
        for (int i = 0; i < 3; ++i) EXPECT_EQ(shape[1][i], shape[0][i]) << "layer " << l;
        for (int i = 0; i < 6; ++i) EXPECT_EQ(where[1][i], where[0][i]) << "layer " << l;
    }
}

TEST_P(Op, FileRoundTrip) {
    const OpCase &c = GetParam();
    Random rng(42);
    Prepared s = make_setup(c, rng);
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("snn_op_" + std::to_string(getpid()) + "_" + op_name(c.op) + "_" + c.label +
                               ".safetensors"))
                                 .string();
    ASSERT_EQ(snn_model_save(s.model.get(), path.c_str()), SNN_OK) << snn_last_error();
    snn_model *raw = nullptr;
    ASSERT_EQ(snn_model_load(path.c_str(), &raw), SNN_OK) << snn_last_error();
    std::filesystem::remove(path);
    Model loaded(raw);
    EXPECT_EQ(describe(loaded.get()), describe(s.model.get()));
    EXPECT_TRUE(same_bits(params_of(loaded.get()), s.params));
    EXPECT_TRUE(same_bits(get_state(loaded.get()), s.state));

    const Feed feed = make_feed(c, s.model.get(), c.batch, rng);
    for (int training = 0; training <= 1; ++training) {
        Floats y[2], state_after[2];
        snn_model *models[2] = {s.model.get(), loaded.get()};
        for (int m = 0; m < 2; ++m) {
            ASSERT_EQ(snn_set_state(models[m], s.state.data(), s.state.size()), SNN_OK);
            Forward fwd = make_forward(models[m], c.batch);
            ASSERT_EQ(snn_cache_set_training(fwd.get(), training), SNN_OK);
            ASSERT_EQ(snn_cache_set_seed(fwd.get(), 9), SNN_OK);
            y[m] = run_feed(fwd.get(), models[m], feed);
            state_after[m] = get_state(models[m]);
        }
        EXPECT_TRUE(same_bits(y[1], y[0])) << (training ? "training" : "inference") << " outputs";
        EXPECT_TRUE(same_bits(state_after[1], state_after[0])) << (training ? "training" : "inference")
                                                               << " state after a pass";
    }
}

// ---- bf16 against float32 ------------------------------------------------------------
//
// Bf16: the case's training step (forward, backprop) at bf16 and at float32
// from the same parameters, state and inputs. Without ops with products the
// results are bit-identical (every other op computes float32 at every
// precision). With them, each output, input gradient and parameter gradient
// v is within
//     |v_bf16 - v_f32| <= 2^-8 * 2 D * sqrt(K) * max |v_f32|
// of float32's: a product whose operands are rounded to bf16 (unit roundoff
// u = 2^-8, each product a b off by at most 2u |a b|) is off by at most
// 2u sum_k |a_k b_k|, which for K terms of the vector's scale is about
// sqrt(K) times the largest result; the errors of the D product layers the
// values pass through add up. K is the longest product of the model (a
// layer's inputs, outputs, or the rows its weight gradient sums over).
// Then the native bf16 kernels (CpuKernels::fast, where the processor has
// AVX-512 BF16) against the emulated path (CpuKernels::reference): the same
// rounded operands summed in another order, within float32 tolerance.
//
// bf16's rules (cpu_bf16_rules) give float32's kernels to the convolutions
// whose shape runs faster in float32 (conv_bf16_takes_f32: every
// convolution of these small cases) and to products of at most 4 rows or
// depth 4 (a dense layer over at most 4 rows): a case whose product layers
// are all such gives float32's bits at bf16. The bound and the native
// kernels against the emulated path are checked with the rules turned off,
// every product on the bf16 kernels, as larger layers would run.

struct Step {
    Floats y, grads, input_grads;
    float loss = 0.0f;
};

Step train_step(const OpCase &c, snn_precision precision, snn::CpuKernels kernels, bool bf16_rule = false) {
    snn::cpu_choose_kernels(kernels);
    snn::cpu_bf16_rules(bf16_rule);
    Random rng(42);
    Prepared s = make_setup(c, rng);
    snn_model *model = s.model.get();
    const Feed f = make_feed(c, model, c.batch, rng);
    Forward fwd = make_forward(model, c.batch);
    Backward bwd = make_backward(model, c.batch);
    Step out;
    EXPECT_EQ(snn_cache_set_precision(fwd.get(), precision), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_cache_set_seed(fwd.get(), 5), SNN_OK);
    if (!f.tokens) {
        EXPECT_EQ(snn_set_input_gradient(bwd.get(), 1), SNN_OK);
    }
    set_loss_inputs(bwd.get(), c, f);
    out.y = run_feed(fwd.get(), model, f);
    EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), model, c.loss, &out.loss), SNN_OK) << snn_last_error();
    out.grads = grads_of(bwd.get(), model);
    out.input_grads.resize(f.x.size());
    if (!f.tokens) {
        EXPECT_EQ(snn_get_input_gradients(bwd.get(), out.input_grads.data(), out.input_grads.size()), SNN_OK);
    }
    snn::cpu_choose_kernels(snn::CpuKernels::environment);
    snn::cpu_bf16_rules(true);
    return out;
}

// True when the case's product layers are all convolutions that the bf16
// rules give the float32 rows or dense layers over at most 4 rows (and
// there is at least one).
bool only_layers_ruled_f32(const OpCase &c) {
    const snn::Network net = snn::parse_spec(c.spec);
    bool any = false;
    for (const snn::Layer &l : net.layers) {
        if (!snn::op_desc(l.kind).products) continue;
        const bool f32 = l.kind == OpKind::conv    ? snn::conv_bf16_takes_f32(snn::conv_dims(l))
                         : l.kind == OpKind::dense ? snn::rows_of(l, c.batch) <= 4
                                                   : false;
        if (!f32) return false;
        any = true;
    }
    return any;
}

// D and K of the tolerance above: the product layers of the case's spec and
// the longest product among them (0 and 1 without any).
struct Products {
    int64_t layers = 0, longest = 1;
};

Products products_of(const OpCase &c) {
    Products p;
    const snn::Network net = snn::parse_spec(c.spec);
    for (const snn::Layer &l : net.layers) {
        if (!snn::op_desc(l.kind).products) continue;
        ++p.layers;
        const int64_t rows = c.batch * l.out.size() / std::max<int64_t>(1, l.out.c);
        p.longest = std::max({p.longest, l.in.size(), l.out.size(), rows});
    }
    return p;
}

double max_abs(const Floats &v) {
    double m = 0.0;
    for (float x : v) m = std::max(m, double(std::fabs(x)));
    return m;
}

// Values within `tol` of the reference's (absolute), naming the first few
// that are not; returns the largest difference over tol.
double expect_within(const char *what, const Floats &got, const Floats &want, double tol) {
    EXPECT_EQ(got.size(), want.size()) << what;
    double worst = 0.0;
    int reported = 0;
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
        const double diff = std::fabs(double(got[i]) - double(want[i]));
        worst = std::max(worst, tol > 0.0 ? diff / tol : diff);
        if (!(diff <= tol) && reported++ < 3)
            ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", want " << want[i] << " within " << tol;
    }
    return worst;
}

TEST_P(Op, Bf16) {
    const OpCase &c = GetParam();
    const Products p = products_of(c);
    const Step f32 = train_step(c, SNN_PRECISION_FLOAT32, snn::CpuKernels::environment);
    const Step ruled = train_step(c, SNN_PRECISION_BF16, snn::CpuKernels::environment, /*bf16_rule=*/true);
    if (only_layers_ruled_f32(c)) {
        EXPECT_TRUE(same_bits(ruled.y, f32.y));
        EXPECT_TRUE(same_bits(ruled.grads, f32.grads));
        EXPECT_TRUE(same_bits(ruled.input_grads, f32.input_grads));
        std::printf("  float32 by the bf16 rules: bf16 bit-identical to float32\n");
    }
    const Step bf16 = train_step(c, SNN_PRECISION_BF16, snn::CpuKernels::environment);
    if (p.layers == 0) {
        EXPECT_TRUE(same_bits(bf16.y, f32.y));
        EXPECT_TRUE(same_bits(bf16.grads, f32.grads));
        EXPECT_TRUE(same_bits(bf16.input_grads, f32.input_grads));
        std::printf("  no products: bf16 bit-identical to float32\n");
    } else {
        const double bound = std::ldexp(1.0, -8) * 2.0 * double(p.layers) * std::sqrt(double(p.longest));
        double worst = expect_within("output", bf16.y, f32.y, bound * max_abs(f32.y));
        worst = std::max(worst, expect_within("parameter gradient", bf16.grads, f32.grads, bound * max_abs(f32.grads)));
        worst = std::max(worst, expect_within("input gradient", bf16.input_grads, f32.input_grads,
                                              bound * max_abs(f32.input_grads)));
        std::printf("  %lld product layers, longest %lld: worst %.3f of the tolerance\n", (long long)p.layers,
                    (long long)p.longest, worst);
    }
    snn::cpu_choose_kernels(snn::CpuKernels::fast);
    const bool native = snn::cpu_has_bf16();
    snn::cpu_choose_kernels(snn::CpuKernels::environment);
    if (!native) GTEST_SKIP() << "no AVX-512 BF16: the native kernels against the emulated path not run";
    const Step fast = train_step(c, SNN_PRECISION_BF16, snn::CpuKernels::fast);
    const Step emulated = train_step(c, SNN_PRECISION_BF16, snn::CpuKernels::reference);
    // Float32 sums of the same products in another order (and a rounding to
    // bf16 that such a difference may tip in a later layer): 2^-16 of the
    // scale, far below bf16's 2^-8.
    const double sum_tol = std::ldexp(1.0, -16) * std::max(1.0, double(p.longest) / 16.0);
    expect_within("native output", fast.y, emulated.y, sum_tol * std::max(1.0, max_abs(emulated.y)));
    expect_within("native parameter gradient", fast.grads, emulated.grads,
                  sum_tol * std::max(1.0, max_abs(emulated.grads)));
    expect_within("native input gradient", fast.input_grads, emulated.input_grads,
                  sum_tol * std::max(1.0, max_abs(emulated.input_grads)));
}

// ---- CPU against GPU, node by node through the kernel tables --------------------------

[[noreturn]] void throw_error(snn_status status, const char *message) { throw snn::Error(status, message); }
void ignore_log(int32_t, const char *) {}

// The GPU backend, or null with *why saying why there is none.
snn::Backend *gpu_backend(std::string *why) {
#ifdef SNN_CUDA_EMULATED
    (void)why;
    static snn::Backend *be = [] {
        snn::cu::set_host(throw_error, ignore_log);
        return new snn::cu::CudaBackend(0);
    }();
    return be;
#else
    (void)throw_error;
    (void)ignore_log;
    try {
        return &snn::backend_for(0);
    } catch (const snn::Error &e) {
        *why = std::string(snn_status_string(e.status())) + ": " + e.what();
        return nullptr;
    }
#endif
}

// Memory of one backend, from and to host vectors.
class Buffer {
public:
    Buffer(snn::Backend &be, snn::Stream *s, const Floats &host) : be_(be), s_(s), count_(host.size()) {
        p_ = static_cast<float *>(be.alloc(count_ * sizeof(float)));
        if (count_) be.upload(s, p_, host.data(), count_ * sizeof(float));
    }
    ~Buffer() { be_.release(p_); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    float *get() const { return p_; }
    Floats read() const {
        Floats host(count_);
        if (count_) be_.download(s_, host.data(), p_, count_ * sizeof(float));
        return host;
    }

private:
    snn::Backend &be_;
    snn::Stream *s_;
    size_t count_;
    float *p_ = nullptr;
};

struct NodeInputs {
    Floats x[snn::kMaxOpInputs], params, state, dy;
};

struct NodeResult {
    Floats y, aux, state, dx[snn::kMaxOpInputs], grads;
};

// One comparison of the Gpu mode: a spec's nodes at a batch, planned for
// plan_batch (the engine plans for its caches' largest batch).
struct GpuRun {
    const char *spec;
    int64_t batch, plan_batch;
    std::vector<int32_t> lengths;
    Values values;
    Modes modes;
    uint64_t pass;
    const Tolerance *emulated;  // the case's tolerances on the emulated GPU, or null: the float32 ones
    bool repeated;              // the GPU runs each node as every entry of kGpuRuns, or once
};

// Forward then backward of node i of net on `be`, every output starting NaN.
NodeResult run_node(snn::Backend &be, const snn::OpKernels &k, const snn::Network &net, size_t i, const GpuRun &run,
                    bool training, const NodeInputs &in) {
    const snn::Layer &l = net.layers[i];
    const int64_t n = run.batch;
    snn::Stream *s = be.create_stream(0, false);
    const size_t out = size_t(n * l.out.size());
    const size_t aux = l.aux_fixed + size_t(n) * l.aux_per_sample;
    const Floats nan_out(out, std::nanf("")), nan_aux(aux, std::nanf(""));
    NodeResult r;
    {
        Buffer params(be, s, in.params), state(be, s, in.state), dy(be, s, in.dy), y(be, s, nan_out),
            aux_buf(be, s, nan_aux), grads(be, s, Floats(in.params.size(), std::nanf("")));
        std::vector<std::unique_ptr<Buffer>> x, dx;
        for (size_t j = 0; j < l.inputs.size(); ++j) {
            x.push_back(std::make_unique<Buffer>(be, s, in.x[j]));
            dx.push_back(std::make_unique<Buffer>(be, s, Floats(in.x[j].size(), std::nanf(""))));
        }
        const std::vector<int32_t> &lengths = run.lengths;
        int32_t *lengths_buf = static_cast<int32_t *>(be.alloc(lengths.size() * sizeof(int32_t)));
        if (!lengths.empty()) be.upload(s, lengths_buf, lengths.data(), lengths.size() * sizeof(int32_t));
        size_t workspace_bytes = 0;
        void *plan = k.plan ? k.plan(be, s, l, std::max(n, run.plan_batch), true, snn::Precision::f32,
                                     &workspace_bytes)
                            : nullptr;
        void *workspace = be.alloc(workspace_bytes);
        snn::OpArgs a;
        a.be = &be;
        a.s = s;
        a.l = &l;
        a.plan = plan;
        a.workspace = workspace;
        a.n = n;
        a.training = training;
        a.key = snn::dropout_key(42, run.pass, i);
        a.lengths = lengths.empty() ? nullptr : lengths_buf;
        for (size_t j = 0; j < l.inputs.size(); ++j) a.x[j] = x[j]->get();
        a.y = y.get();
        a.params = params.get();
        a.state = state.get();
        a.aux = aux_buf.get();
        k.forward(a);
        r.y = y.read();
        r.aux = aux_buf.read();
        r.state = state.read();
        a.dy = dy.get();
        for (size_t j = 0; j < l.inputs.size(); ++j) a.dx[j] = dx[j]->get();
        a.grads = grads.get();
        k.backward(a);
        for (size_t j = 0; j < l.inputs.size(); ++j) r.dx[j] = dx[j]->read();
        r.grads = grads.read();
        be.release(workspace);
        be.release(lengths_buf);
        if (k.release) k.release(be, plan);
    }
    be.destroy_stream(s);
    return r;
}

// |gpu - cpu| <= atol + rtol |cpu| per element (float32 with sums in other
// orders); NaN only against NaN.
void expect_near(const std::string &what, const Floats &gpu, const Floats &cpu, double rtol, double atol) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    size_t bad = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const bool ok = std::isnan(cpu[i]) ? std::isnan(gpu[i])
                                           : std::fabs(double(gpu[i]) - cpu[i]) <= atol + rtol * std::fabs(cpu[i]);
        if (ok) continue;
        if (bad++ < 5) ADD_FAILURE() << what << "[" << i << "]: gpu " << gpu[i] << ", cpu " << cpu[i];
    }
    if (bad > 5) ADD_FAILURE() << what << ": " << bad << " of " << gpu.size() << " values differ";
}

// |gpu - cpu| <= tol max(1, |cpu|) per element, tol 0: the same bits; NaN
// only against NaN.
void expect_within_tolerance(const std::string &what, const Floats &gpu, const Floats &cpu, float tol) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    size_t bad = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const float g = gpu[i], c = cpu[i];
        bool ok;
        if (std::isnan(g) || std::isnan(c))
            ok = std::isnan(g) && std::isnan(c);
        else if (tol == 0.0f)
            ok = std::memcmp(&g, &c, sizeof g) == 0;
        else
            ok = std::fabs(g - c) <= tol * std::fmax(1.0f, std::fabs(c));
        if (ok) continue;
        if (bad++ < 5)
            ADD_FAILURE() << what << "[" << i << "]: gpu " << g << ", cpu " << c << " (tolerance " << tol << ")";
    }
    if (bad > 5) ADD_FAILURE() << what << ": " << bad << " of " << gpu.size() << " values differ";
}

void expect_same_bits(const std::string &what, const NodeResult &a, const NodeResult &b, size_t inputs) {
    EXPECT_TRUE(same_bits(a.y, b.y)) << what << ": y";
    EXPECT_TRUE(same_bits(a.aux, b.aux)) << what << ": aux";
    EXPECT_TRUE(same_bits(a.state, b.state)) << what << ": state";
    for (size_t j = 0; j < inputs; ++j) EXPECT_TRUE(same_bits(a.dx[j], b.dx[j])) << what << ": dx" << j;
    EXPECT_TRUE(same_bits(a.grads, b.grads)) << what << ": parameter gradients";
}

void expect_finite(const std::string &what, const Floats &v) {
    for (size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i])) {
            ADD_FAILURE() << what << "[" << i << "] is " << v[i];
            return;
        }
}

// The GPU's runs of one node (a kernel path's; an op case's runs once),
// which must give the same bits: on the emulated GPU under the three orders
// of the blocks of each launch and of each block's threads (the kernels
// reduce in a fixed order); on a GPU twice (no float atomics).
#ifdef SNN_CUDA_EMULATED
const struct {
    snn::emu::Schedule schedule;
    const char *name;
} kGpuRuns[] = {{snn::emu::Schedule::in_order, "blocks and threads in order"},
                {snn::emu::Schedule::reversed, "blocks and threads reversed"},
                {snn::emu::Schedule::shuffled, "blocks and threads shuffled"}};
#else
const struct {
    const char *name;
} kGpuRuns[] = {{"first run"}, {"second run"}};
#endif

NodeResult run_on_gpu(snn::Backend &gpu, const snn::OpKernels &k, const snn::Network &net, size_t i,
                      const GpuRun &run, bool training, const NodeInputs &in, const std::string &what) {
    NodeResult first;
    for (const auto &r : kGpuRuns) {
#ifdef SNN_CUDA_EMULATED
        snn::emu::set_schedule(r.schedule, 0x5EED);
#endif
        NodeResult b = run_node(gpu, k, net, i, run, training, in);
        if (&r == &kGpuRuns[0]) {
            first = std::move(b);
            if (!run.repeated) break;
        } else {
            expect_same_bits(what + ", " + r.name + " against " + kGpuRuns[0].name, b, first,
                             net.layers[i].inputs.size());
        }
    }
    return first;
}

// The inputs of node i: x by run.values (token ids in [0, vocab), the first
// 0 and the last vocab - 1), parameters near 1, running variances positive.
NodeInputs node_inputs(const snn::Network &net, size_t i, const GpuRun &run) {
    const snn::Layer &l = net.layers[i];
    NodeInputs in;
    Random rng(std::hash<std::string>()(run.spec) + i);
    for (size_t j = 0; j < l.inputs.size(); ++j) {
        const snn::Layer &from = net.layers[size_t(l.inputs[j])];
        Floats &x = in.x[j];
        x = rng.uniform_vector(size_t(run.batch * from.out.size()), -3.0f, 3.0f);
        if (from.out.is_tokens) {
            for (float &v : x) v = std::floor(rng.uniform(0.0f, float(from.units) - 0.01f));
            x.front() = 0.0f;
            x.back() = float(from.units - 1);
            continue;
        }
        if (run.values == Values::times40)
            for (float &v : x) v *= 40.0f;
        if (run.values == Values::grid || run.values == Values::grid_nan)
            for (float &v : x) v = std::round(v * 2.0f) / 2.0f;
        if (run.values == Values::grid_nan) x[x.size() / 3] = std::nanf("");
    }
    in.params = rng.uniform_vector(net.param_count, 0.5f, 1.5f);
    in.state = rng.uniform_vector(net.state_count, 0.25f, 2.0f);
    in.dy = rng.uniform_vector(size_t(run.batch * l.out.size()), -3.0f, 3.0f);
    return in;
}

// Every node of run.spec through its kernel tables on the CPU and on the GPU
// from the same inputs, parameters and state, forward then backward, in the
// run's modes; inference leaves the state as it was. Skips without a GPU or
// without GPU kernels for `op`.
void compare_nodes(OpKind op, const GpuRun &run) {
    std::string why;
    snn::Backend *gpu = gpu_backend(&why);
    if (gpu == nullptr) GTEST_SKIP() << "no GPU backend: " << why;
    snn::Backend &cpu = snn::cpu_backend();
    const snn::Network net = snn::parse_spec(run.spec);
    std::vector<std::string> lacking;
    size_t compared = 0;
    for (size_t i = 1; i < net.layers.size(); ++i) {
        const snn::Layer &l = net.layers[i];
        const snn::OpKernels *ck = snn::op_kernels(cpu, l.kind), *gk = snn::op_kernels(*gpu, l.kind);
        ASSERT_NE(ck, nullptr) << op_name(l.kind) << " has no CPU kernels";
        if (l.alias) continue;  // flatten: the input's memory, no kernel runs
        if (gk == nullptr) {
            lacking.push_back(op_name(l.kind));
            continue;
        }
        const NodeInputs in = node_inputs(net, i, run);
        for (bool training : {true, false}) {
            if ((training && run.modes == Modes::inference) || (!training && run.modes == Modes::training)) continue;
            const std::string what = snn::layer_label(net, i) + (training ? " training" : " inference");
            SCOPED_TRACE(what);
            const NodeResult a = run_node(cpu, *ck, net, i, run, training, in);
            const NodeResult b = run_on_gpu(*gpu, *gk, net, i, run, training, in, what);
            if (run.emulated) {
                const Tolerance &t = *run.emulated;
                expect_within_tolerance(what + ": y", b.y, a.y, t.y);
                expect_within_tolerance(what + ": aux", b.aux, a.aux, t.aux);
                expect_within_tolerance(what + ": state", b.state, a.state, t.state);
                for (size_t j = 0; j < l.inputs.size(); ++j)
                    expect_within_tolerance(what + ": dx" + std::to_string(j), b.dx[j], a.dx[j], t.dx);
                expect_within_tolerance(what + ": parameter gradients", b.grads, a.grads, t.grads);
            } else {
                expect_near(what + ": y", b.y, a.y, 1e-4, 1e-5);
                expect_near(what + ": state", b.state, a.state, 1e-5, 1e-6);
                for (size_t j = 0; j < l.inputs.size(); ++j)
                    expect_near(what + ": dx" + std::to_string(j), b.dx[j], a.dx[j], 1e-3, 1e-5);
                expect_near(what + ": parameter gradients", b.grads, a.grads, 1e-3, 1e-5);
            }
            if (!training) {
                EXPECT_TRUE(same_bits(a.state, in.state)) << what << ": the CPU changed the state";
                EXPECT_TRUE(same_bits(b.state, in.state)) << what << ": the GPU changed the state";
            }
            if (run.values == Values::times40) {
                expect_finite(what + ": y", b.y);
                for (size_t j = 0; j < l.inputs.size(); ++j) expect_finite(what + ": dx", b.dx[j]);
            }
        }
        ++compared;
    }
    std::printf("  %zu nodes compared on %s\n", compared, gpu->name());
    if (std::find(lacking.begin(), lacking.end(), op_name(op)) != lacking.end())
        GTEST_SKIP() << "the GPU backend (" << gpu->name() << ") has no " << op_name(op) << " kernels"
#ifdef SNN_CUDA_EMULATED
                     << " in the emulation (cuDNN calls are not emulated)"
#endif
            ;
}

TEST_P(Op, Gpu) {
    const OpCase &c = GetParam();
    compare_nodes(c.op, {c.spec, c.batch, 0, parse_lengths(c.lengths), Values::uniform, Modes::both, 1, nullptr, false});
}

// The kernel-path axis: the Gpu mode only, at shapes that take the GPU
// kernels' other paths; on the emulated GPU within the case's tolerances,
// and every kernel the case names launched.
class KernelPath : public ::testing::TestWithParam<KernelPathCase> {};

TEST_P(KernelPath, Gpu) {
    const KernelPathCase &c = GetParam();
#ifdef SNN_CUDA_EMULATED
    const Tolerance *emulated = &c.tol;
    const bool repeated = c.every_order;
    std::vector<uint64_t> before;
    for (const char *k : c.kernels)
        if (k) before.push_back(snn::emu::launches_of(k));
#else
    const Tolerance *emulated = nullptr;
    const bool repeated = true;
#endif
    compare_nodes(c.op, {c.spec, c.batch, c.plan_batch, parse_lengths(c.lengths), c.values, c.modes, c.pass, emulated,
                      repeated});
#ifdef SNN_CUDA_EMULATED
    for (size_t k = 0; k < before.size(); ++k)
        EXPECT_GT(snn::emu::launches_of(c.kernels[k]), before[k]) << c.kernels[k] << " never ran";
#endif
}

std::string case_name(const ::testing::TestParamInfo<OpCase> &info) { return info.param.label; }

std::vector<KernelPathCase> kernel_paths_of(OpKind op) {
    std::vector<KernelPathCase> v;
    for (const KernelPathCase &c : kKernelPaths)
        if (c.op == op) v.push_back(c);
    return v;
}

std::string kernel_path_name(const ::testing::TestParamInfo<KernelPathCase> &info) { return info.param.label; }

#define SNN_OP_INSTANTIATE(name)                                                                               \
    INSTANTIATE_TEST_SUITE_P(name, Op, ::testing::ValuesIn(cases_of(OpKind::name)), case_name);               \
    INSTANTIATE_TEST_SUITE_P(name, KernelPath, ::testing::ValuesIn(kernel_paths_of(OpKind::name)), kernel_path_name);
SNN_OP_LIST(SNN_OP_INSTANTIATE)
#undef SNN_OP_INSTANTIATE

// ---- the registry ----------------------------------------------------------------------

// The generic ops are those whose descriptor carries generic kernels; every
// other op has CPU kernels of its own (a strong reference: see
// lib/cpu/cpu_backend.cpp), with a forward and a backward pass.
#define SNN_OP_COUNT(name) +1
constexpr size_t kOpCount = 0 SNN_OP_LIST(SNN_OP_COUNT);
#undef SNN_OP_COUNT

TEST(OpRegistry, EveryOpRunsOnTheCpu) {
    ASSERT_EQ(snn::op_count(), kOpCount);
    for (size_t k = 0; k < snn::op_count(); ++k) {
        const OpKind kind = OpKind(k);
        const snn::OpDesc &d = snn::op_desc(kind);
        SCOPED_TRACE(d.name);
        EXPECT_EQ(d.generic != nullptr, snn::op_is_generic(kind));
        EXPECT_EQ(snn::cpu_backend().kernels(kind) == nullptr, snn::op_is_generic(kind));
        const snn::OpKernels *kernels = snn::op_kernels(snn::cpu_backend(), kind);
        ASSERT_NE(kernels, nullptr);
        if (kind != OpKind::input && kind != OpKind::flatten) {  // no kernel runs for these
            EXPECT_NE(kernels->forward, nullptr);
            EXPECT_NE(kernels->backward, nullptr);
        }
    }
}

// Labels name test cases: unique within an op, letters, digits and _.
template <typename Case, size_t N>
void expect_labels_are_test_names(const Case (&cases)[N]) {
    for (size_t i = 0; i < N; ++i) {
        const std::string label = cases[i].label;
        EXPECT_FALSE(label.empty());
        for (char ch : label) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') << label;
        for (size_t j = 0; j < i; ++j)
            EXPECT_FALSE(cases[j].op == cases[i].op && label == cases[j].label) << label << " twice";
    }
}

TEST(OpRegistry, CaseLabelsAreTestNames) {
    expect_labels_are_test_names(kCases);
    expect_labels_are_test_names(kKernelPaths);
}

// ---- timing ----------------------------------------------------------------------------

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int time_cases(int repeats, int64_t batch) {
    std::printf("%-16s %-26s %6s %14s %14s\n", "op", "case", "batch", "forward us", "backward us");
    for (const OpCase &c : kCases) {
        snn_model *raw = nullptr;
        if (snn_model_create(c.spec, &raw) != SNN_OK) {
            std::fprintf(stderr, "%s/%s: %s\n", op_name(c.op), c.label, snn_last_error());
            return 1;
        }
        Model model(raw);
        snn_forward_cache *f = nullptr;
        snn_backward_cache *b = nullptr;
        if (snn_preallocate(model.get(), batch, &f) != SNN_OK ||
            snn_preallocate_grads(model.get(), batch, &b) != SNN_OK) {
            std::fprintf(stderr, "%s/%s: %s\n", op_name(c.op), c.label, snn_last_error());
            snn_forward_cache_destroy(f);
            return 1;
        }
        Forward fwd(f);
        Backward bwd(b);
        Random rng(3);
        const Feed feed = make_feed(c, model.get(), batch, rng);
        set_feed(fwd.get(), feed);
        set_loss_inputs(bwd.get(), c, feed);
        std::vector<double> forward_us, backward_us;
        using clock = std::chrono::steady_clock;
        for (int r = 0; r <= repeats; ++r) {  // the first pass warms up
            const auto t0 = clock::now();
            const snn_status fs = snn_forward(fwd.get(), model.get());
            const auto t1 = clock::now();
            const snn_status bs = snn_backprop(bwd.get(), fwd.get(), model.get(), c.loss, nullptr);
            const auto t2 = clock::now();
            if (fs != SNN_OK || bs != SNN_OK) {
                std::fprintf(stderr, "%s/%s: %s\n", op_name(c.op), c.label, snn_last_error());
                return 1;
            }
            if (r == 0) continue;
            forward_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            backward_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
        }
        std::printf("%-16s %-26s %6lld %14.1f %14.1f\n", op_name(c.op), c.label, (long long)batch,
                    median(forward_us), median(backward_us));
    }
    return 0;
}

}  // namespace
}  // namespace op_harness

int main(int argc, char **argv) {
    // The golden directory is the one argument that is neither a gtest flag
    // nor one of the timing mode's.
    bool time = false;
    int repeats = 20;
    long long batch = 32;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--time")
            time = true;
        else if (a.rfind("--repeats=", 0) == 0)
            repeats = std::max(1, std::atoi(a.c_str() + 10));
        else if (a.rfind("--batch=", 0) == 0)
            batch = std::max(1LL, std::atoll(a.c_str() + 8));
        else if (a.rfind("--gtest", 0) != 0)
            op_harness::g_golden_dir = a;
    }
    if (time) return op_harness::time_cases(repeats, batch);
    if (op_harness::g_golden_dir.empty()) {
        std::fprintf(stderr, "usage: %s <golden data directory> [gtest flags] | --time [--repeats=N] [--batch=N]\n",
                     argv[0]);
        return 2;
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
