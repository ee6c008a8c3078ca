// ONNX import through the C API (snn_model_import_onnx):
//
//   - Fixtures: models PyTorch exported (tests/onnx/fixtures, written by
//     make_fixtures.py): the spec import gives, the outputs against
//     PyTorch's (float64 from the same float32 parameters), and a few SGD
//     steps against PyTorch's (the loss before each step, the outputs after
//     them). Each prints its largest differences.
//   - Refusals: hand-built files (write_model) snn cannot represent, each
//     refused with SNN_ERR_UNSUPPORTED and a message that names the reason,
//     every unmappable node of a graph listed at once; and broken graphs
//     (an undefined name, a cycle) with SNN_ERR_FILE_FORMAT.
//   - Round trip: every model of the op harness (tests/ops/op_cases.h)
//     exported (snn_model_export_onnx_to_buffer) and imported again gives the
//     same spec and bit-identical parameters and state; a sequence model
//     exported with its "lengths" input too, and the two models then give
//     bit-identical outputs with the same lengths.
//
// Run with the fixtures folder as the first argument (meson does).
#include <gtest/gtest.h>
#include <snn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../ops/op_cases.h"
#include "common/error.h"
#include "onnx/proto.h"

namespace {

std::string g_fixtures = "tests/onnx/fixtures";

std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

std::string describe(const snn_model *m) {
    size_t len = 0;
    snn_model_describe(m, nullptr, 0, &len);
    std::string s(len + 1, '\0');
    snn_model_describe(m, &s[0], s.size(), &len);
    s.resize(len);
    return s;
}

// The canonical form of a spec (snn's own describe), or "" with the error.
std::string canonical(const std::string &spec, std::string *error) {
    snn_model *m = nullptr;
    if (snn_model_create(spec.c_str(), &m) != SNN_OK) {
        *error = snn_last_error();
        return "";
    }
    const std::string s = describe(m);
    snn_model_destroy(m);
    return s;
}

struct Model {
    snn_model *m = nullptr;
    ~Model() { snn_model_destroy(m); }
};
struct Fwd {
    snn_forward_cache *c = nullptr;
    ~Fwd() { snn_forward_cache_destroy(c); }
};
struct Bwd {
    snn_backward_cache *c = nullptr;
    ~Bwd() { snn_backward_cache_destroy(c); }
};
struct Opt {
    snn_optimiser *o = nullptr;
    ~Opt() { snn_optimiser_destroy(o); }
};

// from= (a layer reading an earlier one) comes with the graph spec option;
// a build whose parser lacks it cannot hold the fixtures that need it.
bool from_unsupported(const std::string &message) {
    return message.find("from=") != std::string::npos || message.find("'from") != std::string::npos;
}

class Fixture : public ::testing::TestWithParam<const char *> {};

void set_inputs(snn_forward_cache *c, const nlohmann::json &j) {
    if (j["tokens"].get<bool>()) {
        std::vector<int32_t> t;
        for (const auto &v : j["input"]) t.push_back(v.get<int32_t>());
        ASSERT_EQ(snn_set_tokens(c, t.data(), t.size()), SNN_OK) << snn_last_error();
    } else {
        std::vector<float> x;
        for (const auto &v : j["input"]) x.push_back(v.get<float>());
        ASSERT_EQ(snn_set_inputs(c, x.data(), x.size()), SNN_OK) << snn_last_error();
    }
}

double max_diff(const std::vector<float> &a, const nlohmann::json &b, double *scale) {
    double d = 0, s = 0;
    EXPECT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        d = std::max(d, std::fabs(double(a[i]) - b[i].get<double>()));
        s = std::max(s, std::fabs(b[i].get<double>()));
    }
    *scale = s;
    return d;
}

TEST_P(Fixture, MatchesPyTorch) {
    const std::string name = GetParam();
    const std::string text = read_file(g_fixtures + "/" + name + ".json");
    ASSERT_FALSE(text.empty()) << "no fixture " << name;
    const nlohmann::json j = nlohmann::json::parse(text);
    snn_onnx_import_options o{};
    o.size = sizeof o;
    o.sequence_length = j["sequence_length"].get<int64_t>();
    Model m;
    const std::string path = g_fixtures + "/" + name + ".onnx";
    const snn_status st = snn_model_import_onnx(path.c_str(), &o, &m.m);
    if (st == SNN_ERR_SPEC && from_unsupported(snn_last_error()))
        GTEST_SKIP() << name << " needs the spec option from= (the graph branch), which this build's parser refuses: "
                     << snn_last_error();
    ASSERT_EQ(st, SNN_OK) << snn_last_error();

    // The spec.
    std::string error;
    const std::string want = canonical(j["spec"].get<std::string>(), &error);
    if (want.empty() && from_unsupported(error)) GTEST_SKIP() << "the expected spec needs from=: " << error;
    ASSERT_FALSE(want.empty()) << error;
    EXPECT_EQ(describe(m.m), want);

    // The outputs, in inference mode.
    const int64_t batch = j["batch"].get<int64_t>();
    Fwd eval;
    ASSERT_EQ(snn_preallocate(m.m, batch, &eval.c), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_cache_set_training(eval.c, 0), SNN_OK);
    set_inputs(eval.c, j);
    ASSERT_EQ(snn_forward(eval.c, m.m), SNN_OK) << snn_last_error();
    size_t outputs = 0;
    ASSERT_EQ(snn_model_output_size(m.m, &outputs), SNN_OK);
    std::vector<float> y(size_t(batch) * outputs);
    ASSERT_EQ(snn_get_outputs(eval.c, y.data(), y.size()), SNN_OK) << snn_last_error();
    double scale = 0;
    const double d64 = max_diff(y, j["output64"], &scale);
    double s32 = 0;
    const double d32 = max_diff(y, j["output32"], &s32);
    EXPECT_LE(d64, 2e-5 * std::max(1.0, scale)) << name << ": outputs against PyTorch (float64)";

    // Training: SGD steps in training mode, as make_fixtures.py ran them.
    Fwd train;
    Bwd grads;
    Opt opt;
    ASSERT_EQ(snn_preallocate(m.m, batch, &train.c), SNN_OK);
    ASSERT_EQ(snn_preallocate_grads(m.m, batch, &grads.c), SNN_OK);
    ASSERT_EQ(snn_optimiser_create(m.m, SNN_OPTIMISER_SGD, &opt.o), SNN_OK);
    ASSERT_EQ(snn_optimiser_set(opt.o, SNN_HP_LEARNING_RATE, j["lr"].get<double>()), SNN_OK);
    const bool mse = j["loss"] == "mse";
    if (mse) {
        std::vector<float> t;
        for (const auto &v : j["targets"]) t.push_back(v.get<float>());
        ASSERT_EQ(snn_set_targets(grads.c, t.data(), t.size()), SNN_OK) << snn_last_error();
    } else {
        std::vector<int32_t> l;
        for (const auto &v : j["labels"]) l.push_back(v.get<int32_t>());
        ASSERT_EQ(snn_set_labels(grads.c, l.data(), l.size()), SNN_OK) << snn_last_error();
    }
    double loss_diff = 0;
    const int steps = j["steps"].get<int>();
    for (int s = 0; s < steps; ++s) {
        set_inputs(train.c, j);
        ASSERT_EQ(snn_forward(train.c, m.m), SNN_OK) << snn_last_error();
        float loss = 0;
        ASSERT_EQ(snn_backprop(grads.c, train.c, m.m, mse ? SNN_LOSS_MSE : SNN_LOSS_LOGIT_CROSSENTROPY, &loss), SNN_OK)
            << snn_last_error();
        const double want_loss = j["losses64"][size_t(s)].get<double>();
        loss_diff = std::max(loss_diff, std::fabs(loss - want_loss));
        EXPECT_NEAR(loss, want_loss, 2e-5 * std::max(1.0, std::fabs(want_loss))) << name << ": loss of step " << s;
        ASSERT_EQ(snn_optimiser_step(opt.o, m.m, grads.c), SNN_OK) << snn_last_error();
    }
    set_inputs(eval.c, j);
    ASSERT_EQ(snn_forward(eval.c, m.m), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_get_outputs(eval.c, y.data(), y.size()), SNN_OK);
    double after_scale = 0;
    const double d_after = max_diff(y, j["output_after64"], &after_scale);
    EXPECT_LE(d_after, 5e-5 * std::max(1.0, after_scale)) << name << ": outputs after " << steps << " SGD steps";
    std::printf("[ fixture  ] %-26s outputs: max |snn - torch64| %.3g (vs torch32 %.3g); losses: %.3g; "
                "after %d steps: %.3g\n",
                name.c_str(), d64, d32, loss_diff, steps, d_after);
}

const char *const kFixtures[] = {"mlp",         "cnn",         "resblock_folded",         "resblock_bn",
                                 "projection",  "lstm_tokens", "gru_seq",                 "transformer",
                                 "transformer_gelu_causal",    "gelu_silu_ln_opset17",    "gelu_silu_ln_opset13"};
INSTANTIATE_TEST_SUITE_P(Onnx, Fixture, ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<const char *> &i) { return std::string(i.param); });

TEST(OnnxImport, SymbolicStepsNeedTheSequenceLength) {
    Model m;
    const std::string path = g_fixtures + "/gru_seq.onnx";
    ASSERT_EQ(snn_model_import_onnx(path.c_str(), nullptr, &m.m), SNN_ERR_UNSUPPORTED);
    const std::string e = snn_last_error();
    EXPECT_NE(e.find("symbolic"), std::string::npos) << e;
    EXPECT_NE(e.find("sequence_length"), std::string::npos) << e;
    EXPECT_EQ(m.m, nullptr);
}

// ---- hand-built files ------------------------------------------------------

using namespace snn::onnx;

ValueInfo info(const std::string &name, std::vector<int64_t> dims, int32_t type = kFloat) {
    ValueInfo v;
    v.name = name;
    v.elem_type = type;
    v.has_shape = true;
    for (int64_t d : dims) {
        Dim x;
        if (d < 0) x.param = d == -1 ? "batch" : "steps";
        else x.value = d;
        v.shape.push_back(x);
    }
    return v;
}

Tensor tensor(const std::string &name, std::vector<int64_t> dims, std::vector<float> values) {
    Tensor t;
    t.name = name;
    t.data_type = kFloat;
    t.dims = dims;
    t.float_data = values;
    return t;
}

Node make_node(const std::string &op, const std::string &name, std::vector<std::string> in,
               std::vector<std::string> out) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.input = in;
    n.output = out;
    return n;
}

// input [batch, 3] -> Gemm(W [2, 3], b) -> ... -> output
snn::onnx::Model base_model() {
    snn::onnx::Model m;
    m.ir_version = 8;
    m.opset_import.push_back({"", 17});
    m.graph.name = "g";
    m.graph.input.push_back(info("input", {-1, 3}));
    m.graph.initializer.push_back(tensor("W", {2, 3}, {1, 2, 3, 4, 5, 6}));
    m.graph.initializer.push_back(tensor("b", {2}, {0.5f, -0.5f}));
    Node g = make_node("Gemm", "fc", {"input", "W", "b"}, {"h"});
    Attribute tb;
    tb.name = "transB";
    tb.type = kAttrInt;
    tb.i = 1;
    g.attribute.push_back(tb);
    m.graph.node.push_back(g);
    return m;
}

// Imports the model; the status, and the message in *error.
snn_status import(const snn::onnx::Model &m, std::string *error, std::string *spec = nullptr,
                  int64_t sequence_length = 0) {
    const std::string bytes = write_model(m);
    snn_onnx_import_options o{};
    o.size = sizeof o;
    o.sequence_length = sequence_length;
    snn_model *out = nullptr;
    const snn_status st = snn_model_import_onnx_from_buffer(bytes.data(), bytes.size(), &o, &out);
    *error = st == SNN_OK ? "" : snn_last_error();
    if (spec && out) *spec = describe(out);
    snn_model_destroy(out);
    return st;
}

TEST(OnnxImport, TheBaseModelImports) {
    snn::onnx::Model m = base_model();
    m.graph.node.push_back(make_node("Relu", "act", {"h"}, {"output"}));
    m.graph.output.push_back(info("output", {-1, 2}));
    std::string e, spec;
    ASSERT_EQ(import(m, &e, &spec), SNN_OK) << e;
    EXPECT_EQ(spec, "input 3; dense 2 relu");
}

// A subgraph cannot be written by write_model (it keeps none):
// make_fixtures.py writes this file with onnx.helper.
TEST(OnnxImport, RefusesAnIfNode) {
    Model m;
    const std::string path = g_fixtures + "/refuse_if.onnx";
    ASSERT_EQ(snn_model_import_onnx(path.c_str(), nullptr, &m.m), SNN_ERR_UNSUPPORTED);
    const std::string e = snn_last_error();
    EXPECT_NE(e.find("If 'branch': "), std::string::npos) << e;
    EXPECT_NE(e.find("subgraph"), std::string::npos) << e;
}

TEST(OnnxImport, RefusesExternalData) {
    snn::onnx::Model m = base_model();
    m.graph.initializer[0].external = true;
    m.graph.initializer[0].float_data.clear();
    m.graph.node.push_back(make_node("Relu", "act", {"h"}, {"output"}));
    m.graph.output.push_back(info("output", {-1, 2}));
    std::string e;
    EXPECT_EQ(import(m, &e), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(e.find("external"), std::string::npos) << e;
    EXPECT_NE(e.find("'W'"), std::string::npos) << e;
}

TEST(OnnxImport, RefusesTwoOutputsAndTwoInputs) {
    snn::onnx::Model m = base_model();
    m.graph.node.push_back(make_node("Relu", "act", {"h"}, {"output"}));
    m.graph.output.push_back(info("output", {-1, 2}));
    m.graph.output.push_back(info("h", {-1, 2}));
    std::string e;
    EXPECT_EQ(import(m, &e), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(e.find("2 outputs"), std::string::npos) << e;

    snn::onnx::Model two = base_model();
    two.graph.input.push_back(info("other", {-1, 3}));
    two.graph.node.push_back(make_node("Relu", "act", {"h"}, {"output"}));
    two.graph.output.push_back(info("output", {-1, 2}));
    EXPECT_EQ(import(two, &e), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(e.find("2 inputs"), std::string::npos) << e;
}

TEST(OnnxImport, RefusesSymbolicStepsWithoutTheOption) {
    snn::onnx::Model m;
    m.ir_version = 8;
    m.opset_import.push_back({"", 17});
    m.graph.input.push_back(info("input", {-1, -2, 3}));
    m.graph.initializer.push_back(tensor("W", {3, 2}, {1, 2, 3, 4, 5, 6}));
    m.graph.node.push_back(make_node("MatMul", "proj", {"input", "W"}, {"output"}));
    m.graph.output.push_back(info("output", {-1, -2, 2}));
    std::string e, spec;
    EXPECT_EQ(import(m, &e), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(e.find("'steps'"), std::string::npos) << e;
    EXPECT_NE(e.find("sequence_length"), std::string::npos) << e;
    ASSERT_EQ(import(m, &e, &spec, 5), SNN_OK) << e;
    EXPECT_EQ(spec, "input seq 5x3; dense 2 nobias");
}

TEST(OnnxImport, ListsEveryUnmappableNode) {
    snn::onnx::Model m = base_model();
    // h -> Elu -> HardSwish -> Mul(h2, h2) -> output: three nodes snn cannot map.
    m.graph.node.push_back(make_node("Elu", "e1", {"h"}, {"h1"}));
    m.graph.node.push_back(make_node("HardSwish", "hs", {"h1"}, {"h2"}));
    m.graph.node.push_back(make_node("Celu", "c", {"h2"}, {"output"}));
    m.graph.output.push_back(info("output", {-1, 2}));
    std::string e;
    EXPECT_EQ(import(m, &e), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(e.find("3 nodes"), std::string::npos) << e;
    EXPECT_NE(e.find("\nElu 'e1': "), std::string::npos) << e;
    EXPECT_NE(e.find("\nHardSwish 'hs': "), std::string::npos) << e;
    EXPECT_NE(e.find("\nCelu 'c': "), std::string::npos) << e;
}

TEST(OnnxImport, UndefinedNamesAndCyclesAreBrokenFiles) {
    snn::onnx::Model m = base_model();
    m.graph.node.push_back(make_node("Add", "sum", {"h", "nowhere"}, {"output"}));
    m.graph.output.push_back(info("output", {-1, 2}));
    std::string e;
    EXPECT_EQ(import(m, &e), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(e.find("'nowhere'"), std::string::npos) << e;

    snn::onnx::Model c = base_model();
    c.graph.node.push_back(make_node("Add", "a1", {"h", "y2"}, {"y1"}));
    c.graph.node.push_back(make_node("Relu", "a2", {"y1"}, {"y2"}));
    c.graph.node.push_back(make_node("Relu", "a3", {"y2"}, {"output"}));
    c.graph.output.push_back(info("output", {-1, 2}));
    EXPECT_EQ(import(c, &e), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(e.find("cycle"), std::string::npos) << e;
}

TEST(OnnxImport, WeightsThatDoNotFitAreBrokenFiles) {
    snn::onnx::Model m = base_model();
    m.graph.initializer[0] = tensor("W", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
    m.graph.node.push_back(make_node("Relu", "act", {"h"}, {"output"}));
    m.graph.output.push_back(info("output", {-1, 2}));
    std::string e;
    EXPECT_EQ(import(m, &e), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(e.find("Gemm 'fc'"), std::string::npos) << e;
}

TEST(OnnxImport, SharedInitializersMapByPosition) {
    // Two layers read one initializer (the exporter shares equal ones through
    // Identity): each gets its own copy.
    snn::onnx::Model m;
    m.ir_version = 8;
    m.opset_import.push_back({"", 17});
    m.graph.input.push_back(info("input", {-1, 2}));
    m.graph.initializer.push_back(tensor("onnx::Gemm_7", {2, 2}, {1, 2, 3, 4}));
    m.graph.node.push_back(make_node("Identity", "id", {"onnx::Gemm_7"}, {"w2"}));
    m.graph.node.push_back(make_node("MatMul", "m1", {"input", "onnx::Gemm_7"}, {"h"}));
    m.graph.node.push_back(make_node("Tanh", "t", {"h"}, {"h1"}));
    m.graph.node.push_back(make_node("MatMul", "m2", {"h1", "w2"}, {"output"}));
    m.graph.output.push_back(info("output", {-1, 2}));
    std::string e, spec;
    ASSERT_EQ(import(m, &e, &spec), SNN_OK) << e;
    EXPECT_EQ(spec, "input 2; dense 2 tanh nobias; dense 2 nobias");
}

// ---- "lengths" -------------------------------------------------------------------

Tensor int_tensor(const std::string &name, int32_t type, std::vector<int64_t> dims, std::vector<int64_t> values) {
    Tensor t;
    t.name = name;
    t.data_type = type;
    t.dims = dims;
    if (type == kInt64) t.int64_data = values;
    else t.int32_data.assign(values.begin(), values.end());
    return t;
}

Attribute int_attr(const char *name, int64_t v) {
    Attribute a;
    a.name = name;
    a.type = kAttrInt;
    a.i = v;
    return a;
}

// input seq [batch, 4, 3] and lengths [batch]; the mean of each sample's
// valid steps as snn's export writes it: Where(step < length, x, 0),
// ReduceSum over the steps, Div by the length. `reversed` compares the other
// way (step > length), `max` ends in ReduceMax instead of seqpool mean.
snn::onnx::Model lengths_model(bool reversed, bool max) {
    snn::onnx::Model m;
    m.ir_version = 8;
    m.opset_import.push_back({"", 17});
    m.graph.input.push_back(info("input", {-1, 4, 3}));
    m.graph.input.push_back(info("lengths", {-1}, kInt32));
    m.graph.initializer.push_back(int_tensor("steps", kInt32, {4}, {0, 1, 2, 3}));
    m.graph.initializer.push_back(int_tensor("axis1", kInt64, {1}, {1}));
    m.graph.initializer.push_back(int_tensor("axis2", kInt64, {1}, {2}));
    m.graph.initializer.push_back(tensor("zero", {}, {0.0f}));
    m.graph.node.push_back(make_node("Unsqueeze", "col", {"lengths", "axis1"}, {"len"}));
    m.graph.node.push_back(make_node("Less", "valid", reversed ? std::vector<std::string>{"len", "steps"}
                                                               : std::vector<std::string>{"steps", "len"},
                                     {"v"}));
    m.graph.node.push_back(make_node("Unsqueeze", "valid_steps", {"v", "axis2"}, {"v3"}));
    m.graph.node.push_back(make_node("Where", "zeroed", {"v3", "input", "zero"}, {"kept"}));
    if (max) {
        Node r = make_node("ReduceMax", "max", {"kept"}, {"output"});
        Attribute axes;
        axes.name = "axes";
        axes.type = kAttrInts;
        axes.ints = {1};
        r.attribute = {axes, int_attr("keepdims", 0)};
        m.graph.node.push_back(r);
    } else {
        Node r = make_node("ReduceSum", "sum", {"kept", "axis1"}, {"total"});
        r.attribute = {int_attr("keepdims", 0)};
        m.graph.node.push_back(r);
        Node c = make_node("Cast", "to_float", {"len"}, {"lenf"});
        c.attribute = {int_attr("to", kFloat)};
        m.graph.node.push_back(c);
        m.graph.node.push_back(make_node("Div", "mean", {"total", "lenf"}, {"output"}));
    }
    m.graph.output.push_back(info("output", {-1, 3}));
    return m;
}

TEST(OnnxImport, LengthsMapOnlyInTheFormsSnnWrites) {
    std::string e, spec;
    ASSERT_EQ(import(lengths_model(false, false), &e, &spec), SNN_OK) << e;
    EXPECT_EQ(spec, "input seq 4x3; seqpool mean");

    // step > length: the padding kept, the valid steps zeroed.
    EXPECT_EQ(import(lengths_model(true, false), &e), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(e.find("1 node"), std::string::npos) << e;
    EXPECT_NE(e.find("\nLess 'valid': "), std::string::npos) << e;
    EXPECT_NE(e.find("'lengths'"), std::string::npos) << e;

    // A max over steps whose padding is 0, not -inf.
    EXPECT_EQ(import(lengths_model(false, true), &e), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(e.find("\nReduceMax 'max': "), std::string::npos) << e;

    // The full mean scaled by the length: a mean over every step, which
    // seqpool is not with lengths (the Mul after it, reading "lengths" in a
    // form snn does not map, is not listed again).
    snn::onnx::Model scaled = lengths_model(false, false);
    scaled.graph.node.erase(scaled.graph.node.begin() + 1, scaled.graph.node.end());
    Node pool = make_node("ReduceMean", "pool", {"input"}, {"p"});
    Attribute axes;
    axes.name = "axes";
    axes.type = kAttrInts;
    axes.ints = {1};
    pool.attribute = {axes, int_attr("keepdims", 0)};
    scaled.graph.node.push_back(pool);
    Node c = make_node("Cast", "to_float", {"len"}, {"lenf"});
    c.attribute = {int_attr("to", kFloat)};
    scaled.graph.node.push_back(c);
    scaled.graph.node.push_back(make_node("Mul", "scale", {"p", "lenf"}, {"output"}));
    EXPECT_EQ(import(scaled, &e), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(e.find("1 node"), std::string::npos) << e;
    EXPECT_NE(e.find("\nReduceMean 'pool': ReduceMean over every step ignores 'lengths'"), std::string::npos) << e;
}

// input seq [batch, 4, 3] -> LSTM of 2 hidden units -> its last state
// [batch, 2]; with the "lengths" input when `lengths`, read as the LSTM's
// sequence_lens when `sequence_lens`.
snn::onnx::Model lstm_model(bool lengths, bool sequence_lens) {
    snn::onnx::Model m;
    m.ir_version = 8;
    m.opset_import.push_back({"", 17});
    m.graph.input.push_back(info("input", {-1, 4, 3}));
    if (lengths) m.graph.input.push_back(info("lengths", {-1}, kInt32));
    m.graph.initializer.push_back(tensor("W", {1, 8, 3}, std::vector<float>(24, 0.25f)));
    m.graph.initializer.push_back(tensor("R", {1, 8, 2}, std::vector<float>(16, -0.5f)));
    m.graph.initializer.push_back(int_tensor("axis0", kInt64, {1}, {0}));
    Node t = make_node("Transpose", "time_first", {"input"}, {"x"});
    Attribute perm;
    perm.name = "perm";
    perm.type = kAttrInts;
    perm.ints = {1, 0, 2};
    t.attribute = {perm};
    m.graph.node.push_back(t);
    Node r = make_node("LSTM", "rnn", {"x", "W", "R"}, {"", "h"});
    if (sequence_lens) r.input = {"x", "W", "R", "", "lengths"};
    r.attribute = {int_attr("hidden_size", 2)};
    m.graph.node.push_back(r);
    m.graph.node.push_back(make_node("Squeeze", "state", {"h", "axis0"}, {"output"}));
    m.graph.output.push_back(info("output", {-1, 2}));
    return m;
}

// snn applies "lengths" to every sequence layer: an LSTM that does not
// read them would compute something else with them.
TEST(OnnxImport, ASequenceLayerIgnoringLengthsIsRefused) {
    std::string e, spec;
    ASSERT_EQ(import(lstm_model(false, false), &e, &spec), SNN_OK) << e;
    EXPECT_EQ(spec, "input seq 4x3; lstm 2 last nobias");
    ASSERT_EQ(import(lstm_model(true, true), &e, &spec), SNN_OK) << e;
    EXPECT_EQ(spec, "input seq 4x3; lstm 2 last nobias");

    EXPECT_EQ(import(lstm_model(true, false), &e), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(e.find("1 node"), std::string::npos) << e;
    EXPECT_NE(e.find("\nLSTM 'rnn': without sequence_lens"), std::string::npos) << e;
    EXPECT_NE(e.find("ignores 'lengths', which snn applies to every sequence layer"), std::string::npos) << e;

    // One step: every length is 1, which changes nothing.
    snn::onnx::Model one = lstm_model(true, false);
    one.graph.input[0] = info("input", {-1, 1, 3});
    ASSERT_EQ(import(one, &e, &spec), SNN_OK) << e;
    EXPECT_EQ(spec, "input seq 1x3; lstm 2 last nobias");
}

// snn's own export with lengths, one node's input then replaced by a new
// initializer: refused, naming that node (or the one that reads it).
TEST(OnnxImport, AnEditedLengthsExportIsRefusedNamingTheNode) {
    struct Edit {
        const char *spec;
        const char *op;     // the first node of this op is edited
        size_t input;       // its input replaced by `with`
        Tensor with;
        const char *named;  // the op of the node named in the refusal
    };
    const Edit edits[] = {
        // the attention's key mask 0 at padded keys too
        {"input seq 5x4; attention heads=2", "Where", 2, tensor("fill", {}, {0.0f}), "Where"},
        // steps 1..T compared with the lengths: one step too many kept
        {"input seq 5x4; attention heads=2", "Less", 0, int_tensor("fill", kInt32, {5}, {-1, 0, 1, 2, 3}), "Less"},
        // seqpool last at length - 2
        {"input seq 5x4; dense 3; seqpool last", "Sub", 1, int_tensor("fill", kInt32, {}, {2}), "Sub"},
        // seqpool mean over padding set to 1
        {"input seq 5x4; dense 3; seqpool mean", "Where", 2, tensor("fill", {}, {1.0f}), "Where"},
        // conv1d reading padded steps as -inf
        {"input seq 5x4; conv1d 3 2 pad=1", "Where", 2, tensor("fill", {}, {-INFINITY}), "Conv"},
    };
    for (const Edit &edit : edits) {
        Model m;
        ASSERT_EQ(snn_model_create(edit.spec, &m.m), SNN_OK) << snn_last_error();
        snn_onnx_export_options o{sizeof(snn_onnx_export_options), 1};
        size_t size = 0;
        ASSERT_EQ(snn_model_export_onnx_to_buffer(m.m, &o, nullptr, 0, &size), SNN_OK) << snn_last_error();
        std::string bytes(size, '\0');
        ASSERT_EQ(snn_model_export_onnx_to_buffer(m.m, &o, &bytes[0], size, &size), SNN_OK);
        snn::onnx::Model file = read_model(reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size());
        std::string e;
        ASSERT_EQ(import(file, &e), SNN_OK) << edit.spec << ": " << e;
        file.metadata_props.clear();
        bool edited = false;
        for (Node &n : file.graph.node)
            if (n.op_type == edit.op && !edited) {
                n.input.at(edit.input) = "fill";
                edited = true;
            }
        ASSERT_TRUE(edited) << edit.spec << ": no " << edit.op;
        file.graph.initializer.push_back(edit.with);
        EXPECT_EQ(import(file, &e), SNN_ERR_UNSUPPORTED) << edit.spec << ", " << edit.op;
        EXPECT_NE(e.find(std::string("\n") + edit.named + " 'layers."), std::string::npos)
            << edit.spec << ", " << edit.op << ": " << e;
    }
}

// ---- constants folded from bad values ----------------------------------------

// Constants whose folding once crashed, overflowed, read past their values or
// looped without end: each is refused as a broken or unsupported file, and
// promptly.
TEST(OnnxImport, BadConstantsAreRefusedWhenFolded) {
    struct Case {
        const char *what;
        std::vector<Tensor> init;
        std::vector<Node> nodes;  // the last one's output "k" is added to the dense layer's
    };
    auto with = [](Node n, std::vector<Attribute> a) {
        n.attribute = a;
        return n;
    };
    Attribute perm;
    perm.name = "perm";
    perm.type = kAttrInts;
    perm.ints = {0, 0};
    const int64_t huge = int64_t(1) << 40;
    Tensor empty = tensor("empty", {huge, 0}, {});
    const std::vector<Case> cases = {
        {"a Gather of nothing from an empty [2^40, 0]",
         {empty, int_tensor("none", kInt64, {0}, {})},
         {with(make_node("Gather", "pick", {"empty", "none"}, {"k"}), {int_attr("axis", 1)})}},
        {"a Reshape whose 0 copies an axis the constant lacks",
         {tensor("c", {2}, {1, 2}), int_tensor("shape", kInt64, {3}, {0, 0, 2})},
         {make_node("Reshape", "reshape", {"c", "shape"}, {"k"})}},
        {"a Reshape to a negative size",
         {tensor("c", {2}, {1, 2}), int_tensor("shape", kInt64, {2}, {-2, -1})},
         {make_node("Reshape", "reshape", {"c", "shape"}, {"k"})}},
        {"a ConstantOfShape of negative sizes",
         {int_tensor("shape", kInt64, {2}, {-1, -1})},
         {make_node("ConstantOfShape", "fill", {"shape"}, {"k"})}},
        {"an integer Mod of INT64_MIN by -1",
         {int_tensor("a", kInt64, {1}, {INT64_MIN}), int_tensor("b", kInt64, {1}, {-1})},
         {make_node("Mod", "mod", {"a", "b"}, {"k"})}},
        {"a Mul of sizes beyond int64",
         {int_tensor("a", kInt64, {1}, {huge}), int_tensor("b", kInt64, {1}, {huge})},
         {make_node("Mul", "mul", {"a", "b"}, {"k"})}},
        {"a Trilu whose k holds no value",
         {tensor("c", {2, 2}, {1, 2, 3, 4}), int_tensor("kk", kInt64, {0}, {})},
         {make_node("Trilu", "tri", {"c", "kk"}, {"k"})}},
        {"a Slice with fewer steps than starts",
         {tensor("c", {2, 2}, {1, 2, 3, 4}), int_tensor("st", kInt64, {2}, {0, 0}),
          int_tensor("en", kInt64, {2}, {1, 1}), int_tensor("ax", kInt64, {2}, {0, 1}),
          int_tensor("sp", kInt64, {1}, {1})},
         {make_node("Slice", "slice", {"c", "st", "en", "ax", "sp"}, {"k"})}},
        {"a Range whose delta is too small to move its start",
         {tensor("start", {}, {1.0f}), tensor("limit", {}, {2.0f}), tensor("delta", {}, {1e-30f})},
         {make_node("Range", "range", {"start", "limit", "delta"}, {"k"})}},
        {"a Transpose whose perm repeats an axis",
         {tensor("c", {2, 3}, {1, 2, 3, 4, 5, 6})},
         {with(make_node("Transpose", "t", {"c"}, {"k"}), {perm})}},
    };
    for (const Case &c : cases) {
        snn::onnx::Model m = base_model();
        for (const Tensor &t : c.init) m.graph.initializer.push_back(t);
        for (const Node &n : c.nodes) m.graph.node.push_back(n);
        m.graph.node.push_back(make_node("Add", "add", {"h", "k"}, {"output"}));
        m.graph.output.push_back(info("output", {-1, 2}));
        std::string e;
        const snn_status st = import(m, &e);
        EXPECT_TRUE(st == SNN_ERR_UNSUPPORTED || st == SNN_ERR_FILE_FORMAT) << c.what << ": " << st << " " << e;
    }
}

// ---- the round trip ----------------------------------------------------------

class RoundTrip : public ::testing::TestWithParam<op_harness::OpCase> {};

// The spec as the graph alone gives it back: every name replaced by
// l<index of the layer named> (ONNX keeps layer indices, not names), and
// without what only a model's creation and training read (init=, an
// embedding's pad=), which ONNX has no place for.
std::string normalised(const std::string &spec) {
    std::vector<std::vector<std::string>> layers;
    std::stringstream in(spec);
    std::string statement;
    while (std::getline(in, statement, ';')) {
        std::stringstream w(statement);
        std::vector<std::string> words;
        std::string word;
        while (w >> word)
            if (word.compare(0, 5, "init=") != 0 && word.compare(0, 4, "pad=") != 0) words.push_back(word);
        layers.push_back(words);
    }
    std::map<std::string, std::string> names;
    for (size_t i = 0; i < layers.size(); ++i)
        for (const std::string &word : layers[i])
            if (word.compare(0, 5, "name=") == 0) names[word.substr(5)] = "l" + std::to_string(i);
    std::string out;
    for (size_t i = 0; i < layers.size(); ++i) {
        out += i ? "; " : "";
        for (size_t k = 0; k < layers[i].size(); ++k) {
            std::string word = layers[i][k];
            for (const char *key : {"name=", "from="})
                if (word.compare(0, 5, key) == 0 && names.count(word.substr(5))) word = key + names[word.substr(5)];
            if (k == 1 && (layers[i][0] == "add" || layers[i][0] == "concat") && names.count(word)) word = names[word];
            out += (k ? " " : "") + word;
        }
    }
    return out;
}

std::vector<float> parameters_of(snn_model *m) {
    size_t n = 0;
    snn_parameter_count(m, &n);
    std::vector<float> v(n);
    EXPECT_EQ(snn_get_parameters(m, v.data(), n), SNN_OK);
    return v;
}

std::vector<float> state_of(snn_model *m) {
    size_t n = 0;
    snn_state_count(m, &n);
    std::vector<float> v(n);
    EXPECT_EQ(snn_get_state(m, v.data(), n), SNN_OK);
    return v;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// The case's lengths at its batch ("3,1,4"), or where it has none lengths
// from 1 to T that include both.
std::vector<int32_t> case_lengths(const op_harness::OpCase &c, int64_t steps) {
    std::vector<int32_t> out;
    if (c.lengths) {
        std::stringstream s(c.lengths);
        std::string item;
        while (std::getline(s, item, ',')) out.push_back(int32_t(std::stoi(item)));
        return out;
    }
    for (int64_t i = 0; i < c.batch; ++i) out.push_back(int32_t(i == 0 ? steps : 1 + (i * 5 + 1) % steps));
    return out;
}

// The model's outputs at the lengths given, for inputs drawn from a fixed
// seed (token ids for a tokens input).
std::vector<float> outputs_with_lengths(snn_model *m, const std::vector<int32_t> &lengths) {
    const int64_t batch = int64_t(lengths.size());
    int64_t steps = 0, vocab = 0;
    EXPECT_EQ(snn_model_input_sequence(m, &steps, &vocab), SNN_OK);
    size_t features = 0;
    EXPECT_EQ(snn_model_input_size(m, &features), SNN_OK);
    Fwd f;
    EXPECT_EQ(snn_preallocate(m, batch, &f.c), SNN_OK) << snn_last_error();
    if (!f.c) return {};
    EXPECT_EQ(snn_cache_set_training(f.c, 0), SNN_OK);
    if (vocab > 0) {
        std::vector<int32_t> ids(size_t(batch * steps));
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 7 + 3) % size_t(vocab));
        EXPECT_EQ(snn_set_tokens(f.c, ids.data(), ids.size()), SNN_OK) << snn_last_error();
    } else {
        std::vector<float> x(size_t(batch) * features);
        for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i) + 0.1f) * 1.5f;
        EXPECT_EQ(snn_set_inputs(f.c, x.data(), x.size()), SNN_OK) << snn_last_error();
    }
    EXPECT_EQ(snn_set_lengths(f.c, lengths.data(), lengths.size()), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_forward(f.c, m), SNN_OK) << snn_last_error();
    const float *y = nullptr;
    size_t count = 0;
    EXPECT_EQ(snn_outputs(f.c, &y, &count), SNN_OK);
    return y ? std::vector<float>(y, y + count) : std::vector<float>();
}

// Whether the model takes lengths: a sequence input whose steps every
// sequence layer keeps.
bool takes_lengths(snn_model *m) {
    int64_t steps = 0, vocab = 0;
    if (snn_model_input_sequence(m, &steps, &vocab) != SNN_OK || steps <= 0) return false;
    size_t features = 0;
    snn_model_input_size(m, &features);
    Fwd f;
    if (snn_preallocate(m, 1, &f.c) != SNN_OK) return false;
    if (vocab > 0) {
        const std::vector<int32_t> ids(size_t(steps), 0);
        if (snn_set_tokens(f.c, ids.data(), ids.size()) != SNN_OK) return false;
    } else {
        const std::vector<float> x(features, 0.0f);
        if (snn_set_inputs(f.c, x.data(), x.size()) != SNN_OK) return false;
    }
    const int32_t len = int32_t(steps);
    return snn_set_lengths(f.c, &len, 1) == SNN_OK;
}

// Exported then imported: the same spec (names, initialisers and padding
// rows included, from the file's "snn.spec" metadata), bit-identical
// parameters and state (batchnorm's count from "snn.state_counts"). Without
// the metadata, the graph alone gives the same model but for those. A model
// that takes lengths, exported with the "lengths" input, imports to the same
// model again (lengths are no part of snn's spec: every sequence op honours
// those set at run time), and the two give bit-identical outputs with the
// case's lengths.
TEST_P(RoundTrip, ExportThenImportGivesTheSameModel) {
    const op_harness::OpCase &c = GetParam();
    Model m;
    ASSERT_EQ(snn_model_create(c.spec, &m.m), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_model_init(m.m, 7), SNN_OK);
    size_t ns = 0;
    snn_state_count(m.m, &ns);
    std::vector<float> state(ns);
    // State away from its defaults: running statistics, and each layer's
    // last value (batchnorm's count) a whole number.
    for (size_t i = 0; i < ns; ++i) state[i] = 0.25f + 0.125f * float(i % 5);
    int64_t layers = 0;
    snn_model_layer_count(m.m, &layers);
    for (int64_t l = 0; l < layers; ++l) {
        size_t off = 0, cnt = 0;
        snn_model_layer_state(m.m, l, &off, &cnt);
        if (cnt) state[off + cnt - 1] = float(3 + l);
    }
    if (ns) {
        ASSERT_EQ(snn_set_state(m.m, state.data(), ns), SNN_OK) << snn_last_error();
    }
    size_t size = 0;
    ASSERT_EQ(snn_model_export_onnx_to_buffer(m.m, nullptr, nullptr, 0, &size), SNN_OK) << snn_last_error();
    std::string bytes(size, '\0');
    ASSERT_EQ(snn_model_export_onnx_to_buffer(m.m, nullptr, &bytes[0], size, &size), SNN_OK) << snn_last_error();
    Model back;
    ASSERT_EQ(snn_model_import_onnx_from_buffer(bytes.data(), size, nullptr, &back.m), SNN_OK)
        << c.spec << ": " << snn_last_error();
    const std::string original = describe(m.m);
    EXPECT_EQ(describe(back.m), original);
    EXPECT_TRUE(same_bits(parameters_of(back.m), parameters_of(m.m))) << c.spec << ": parameters differ";
    EXPECT_TRUE(same_bits(state_of(back.m), state_of(m.m))) << c.spec << ": state differs";

    // The graph alone.
    snn::onnx::Model file = read_model(reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size());
    ASSERT_NE(file.metadata("snn.spec"), nullptr);
    file.metadata_props.clear();
    const std::string bare = write_model(file);
    Model graph_only;
    ASSERT_EQ(snn_model_import_onnx_from_buffer(bare.data(), bare.size(), nullptr, &graph_only.m), SNN_OK)
        << c.spec << ": " << snn_last_error();
    EXPECT_EQ(normalised(describe(graph_only.m)), normalised(original));
    EXPECT_TRUE(same_bits(parameters_of(graph_only.m), parameters_of(m.m))) << c.spec << ": parameters differ";
    const std::vector<float> s = state_of(m.m), s2 = state_of(graph_only.m);
    ASSERT_EQ(s2.size(), s.size());
    // num_batches_tracked is not in the graph: import starts it at 0.
    for (size_t i = 0; i < s.size(); ++i)
        if (s[i] != s2[i]) {
            EXPECT_EQ(s2[i], 0.0f) << c.spec << ": state " << i << " differs";
        }

    // With the "lengths" input.
    if (!takes_lengths(m.m)) return;
    snn_onnx_export_options with_lengths{sizeof(snn_onnx_export_options), 1};
    ASSERT_EQ(snn_model_export_onnx_to_buffer(m.m, &with_lengths, nullptr, 0, &size), SNN_OK) << snn_last_error();
    std::string lbytes(size, '\0');
    ASSERT_EQ(snn_model_export_onnx_to_buffer(m.m, &with_lengths, &lbytes[0], size, &size), SNN_OK)
        << snn_last_error();
    snn::onnx::Model lfile = read_model(reinterpret_cast<const unsigned char *>(lbytes.data()), lbytes.size());
    ASSERT_EQ(lfile.graph.input.size(), 2u);
    ASSERT_EQ(lfile.graph.input[1].name, "lengths");
    Model lback;
    ASSERT_EQ(snn_model_import_onnx_from_buffer(lbytes.data(), size, nullptr, &lback.m), SNN_OK)
        << c.spec << " (lengths): " << snn_last_error();
    EXPECT_EQ(describe(lback.m), original) << "(lengths)";
    EXPECT_TRUE(same_bits(parameters_of(lback.m), parameters_of(m.m))) << c.spec << " (lengths): parameters differ";
    EXPECT_TRUE(same_bits(state_of(lback.m), state_of(m.m))) << c.spec << " (lengths): state differs";
    lfile.metadata_props.clear();
    const std::string lbare = write_model(lfile);
    Model lgraph;
    ASSERT_EQ(snn_model_import_onnx_from_buffer(lbare.data(), lbare.size(), nullptr, &lgraph.m), SNN_OK)
        << c.spec << " (lengths): " << snn_last_error();
    EXPECT_EQ(normalised(describe(lgraph.m)), normalised(original)) << "(lengths)";
    int64_t steps = 0, vocab = 0;
    ASSERT_EQ(snn_model_input_sequence(m.m, &steps, &vocab), SNN_OK);
    const std::vector<int32_t> lengths = case_lengths(c, steps);
    ASSERT_EQ(int64_t(lengths.size()), c.batch) << c.lengths;
    const std::vector<float> want = outputs_with_lengths(m.m, lengths);
    ASSERT_FALSE(want.empty());
    EXPECT_TRUE(same_bits(outputs_with_lengths(lback.m, lengths), want)) << c.spec << " (lengths): outputs differ";
}

// The metadata is used only when the graph computes what it says: a file
// whose graph was edited afterwards (a relu made a sigmoid, a layer's
// metadata spec that no longer parses, counts that are not whole numbers)
// imports as its graph says.
TEST(RoundTripMetadata, AGraphEditedAfterExportImportsAsTheGraphSays) {
    Model m;
    ASSERT_EQ(snn_model_create("input 4; dense 5 relu name=hidden; batchnorm; dense 5 tanh; add hidden; dense 2",
                               &m.m),
              SNN_OK);
    std::vector<float> counted = state_of(m.m);
    ASSERT_EQ(counted.size(), 11u);
    counted.back() = 4.0f;  // batchnorm's num_batches_tracked
    ASSERT_EQ(snn_set_state(m.m, counted.data(), counted.size()), SNN_OK);
    size_t size = 0;
    ASSERT_EQ(snn_model_export_onnx_to_buffer(m.m, nullptr, nullptr, 0, &size), SNN_OK);
    std::string bytes(size, '\0');
    ASSERT_EQ(snn_model_export_onnx_to_buffer(m.m, nullptr, &bytes[0], size, &size), SNN_OK);
    const snn::onnx::Model file = read_model(reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size());
    auto import = [](const snn::onnx::Model &f) {
        const std::string b = write_model(f);
        Model out;
        EXPECT_EQ(snn_model_import_onnx_from_buffer(b.data(), b.size(), nullptr, &out.m), SNN_OK) << snn_last_error();
        return out.m ? describe(out.m) : std::string();
    };
    EXPECT_EQ(import(file), "input 4; dense 5 relu name=hidden; batchnorm; dense 5 tanh; add hidden; dense 2");
    {
        const std::string b = write_model(file);
        Model out;
        ASSERT_EQ(snn_model_import_onnx_from_buffer(b.data(), b.size(), nullptr, &out.m), SNN_OK);
        EXPECT_EQ(state_of(out.m).back(), 4.0f);
    }

    snn::onnx::Model edited = file;
    bool changed = false;
    for (snn::onnx::Node &n : edited.graph.node)
        if (n.op_type == "Relu") n.op_type = "Sigmoid", changed = true;
    ASSERT_TRUE(changed);
    EXPECT_EQ(import(edited), "input 4; dense 5 sigmoid name=l1; batchnorm; dense 5 tanh; add l1; dense 2");

    snn::onnx::Model bad_spec = file;
    for (auto &e : bad_spec.metadata_props)
        if (e.key == "snn.spec") e.value = "input 4; dense";
    EXPECT_EQ(import(bad_spec), "input 4; dense 5 relu name=l1; batchnorm; dense 5 tanh; add l1; dense 2");

    for (const char *counts : {"2.5", "-1", "1,2", "", "x", "16777217"}) {
        snn::onnx::Model bad_counts = file;
        for (auto &e : bad_counts.metadata_props)
            if (e.key == "snn.state_counts") e.value = counts;
        const std::string b = write_model(bad_counts);
        Model out;
        ASSERT_EQ(snn_model_import_onnx_from_buffer(b.data(), b.size(), nullptr, &out.m), SNN_OK) << snn_last_error();
        const std::vector<float> st = state_of(out.m);
        ASSERT_FALSE(st.empty());
        EXPECT_EQ(st.back(), 0.0f) << "counts '" << counts << "'";
    }
}

std::string case_name(const ::testing::TestParamInfo<op_harness::OpCase> &i) {
    static const char *const names[] = {
#define SNN_OP_NAME(name) #name,
        SNN_OP_LIST(SNN_OP_NAME)
#undef SNN_OP_NAME
    };
    return std::string(names[int(i.param.op)]) + "_" + i.param.label;
}

INSTANTIATE_TEST_SUITE_P(Ops, RoundTrip, ::testing::ValuesIn(op_harness::kCases), case_name);

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (argc > 1) g_fixtures = argv[1];
    return RUN_ALL_TESTS();
}
