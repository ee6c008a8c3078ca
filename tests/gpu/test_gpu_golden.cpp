// Every golden case (tests/golden/data, written by generate.py from PyTorch)
// replayed with the model on the GPU: the GPU runs the same per-element math
// as the CPU (core/math.h), so it must meet the same PyTorch values. The
// tolerances are per element; cuBLAS and cuDNN sum in other orders than the
// CPU, so they are looser than the CPU golden test's.
//
// Usage: test_gpu_golden <golden data directory>
#include "gpu_test.h"

#include "../golden/golden_case.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gpu_test;

namespace {

constexpr double kRel = 1e-4, kAbs = 1e-6;

// Each element within abs + rel * |expected|; prints the worst one otherwise.
void check_close(const std::string &what, const std::vector<float> &actual,
                 const std::vector<double> &expected, double rel, double abs) {
    if (actual.size() != expected.size()) {
        std::fprintf(stderr, "%s: %zu values, expected %zu\n", what.c_str(), actual.size(),
                     expected.size());
        ++failures();
        return;
    }
    const golden::Comparison c = golden::compare(actual, expected, rel, abs);
    if (c.failures != 0) {
        std::fprintf(stderr,
                     "%s: %zu of %zu values off (tolerance %.3g + %.3g |PyTorch|); worst at %zu: "
                     "snn %.9g, PyTorch %.9g\n",
                     what.c_str(), c.failures, expected.size(), abs, rel, c.worst_index,
                     actual[c.worst_index], expected[c.worst_index]);
        ++failures();
    }
}

void check_case(const std::string &dir, const std::string &name, int32_t device) {
    golden::GoldenCase g;
    try {
        g = golden::read_case(dir + "/" + name + ".golden");
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
        ++failures();
        return;
    }
    const golden::Replay r = golden::replay(g, device);
    if (!r.error.empty()) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), r.error.c_str());
        ++failures();
        return;
    }
    // A case with its own absolute tolerances (a reference computed in
    // double) keeps its tiny values meaningful here too.
    auto abs = [&g](const char *array) {
        return std::min(kAbs, 10.0 * g.abs_tolerance_of(array, 1.0));
    };
    check_close(name + ": outputs", r.outputs, g.arrays.at("outputs"), kRel, abs("outputs"));
    check_close(name + ": loss", {r.loss}, g.arrays.at("loss_value"), kRel, abs("loss_value"));
    check_close(name + ": gradients", r.gradients, g.arrays.at("gradients"), kRel,
                abs("gradients"));
    if (!g.arrays.count("tokens"))  // token ids have no gradient
        check_close(name + ": input gradients", r.input_gradients, g.arrays.at("input_gradients"),
                    kRel, abs("input_gradients"));
    check_close(name + ": params after steps", r.params_after_steps,
                g.arrays.at("params_after_steps"), kRel, kAbs);
    if (g.arrays.count("state_after_steps"))
        check_close(name + ": state after steps", r.state_after_steps,
                    g.arrays.at("state_after_steps"), kRel, kAbs);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <golden data directory>\n", argv[0]);
        return 2;
    }
    const int32_t device = test_device();
    std::vector<std::string> names;
    try {
        names = golden::case_names(argv[1]);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "cannot list the golden cases: %s\n", e.what());
        return 1;
    }
    // Guards against a data directory that silently lost its cases.
    CHECK(names.size() >= 65);
    for (const std::string &name : names) check_case(argv[1], name, device);
    std::printf("%zu golden cases replayed\n", names.size());
    return finish("gpu golden");
}
