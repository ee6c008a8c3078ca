// ONNX export through the C API, over every model of the op harness
// (tests/ops/op_cases.h):
//
//   - every model exports, or is refused with SNN_ERR_UNSUPPORTED and a
//     message naming the layer; the refused ones are exactly kRefused (none
//     today); with lengths too, for every sequence model that takes lengths;
//   - the export is deterministic, and the file and buffer forms agree;
//   - the networks ONNX cannot express are refused, naming the layer.
//
// With SNN_ONNX_CASES_DIR set, the Cases test also writes, for each case of
// kCases and each model of kKernelPaths, a folder <op>_<label> with the
// exported model(s), the parameters and state, inputs and snn's outputs at
// batch 1 and at the case's batch (2 if 1; with and without lengths for
// sequence models), and an index cases.json. tests/onnx/ort/run_cases.js
// runs them through ONNX Runtime; check_models.py checks each file with
// onnx's checker and compares its initializers with the parameters and
// state, bit for bit (test_export_ort.sh runs the three).
#include <gtest/gtest.h>
#include <snn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "../ops/op_cases.h"

namespace {

using op_harness::kCases;
using op_harness::kKernelPaths;
using op_harness::OpCase;

const char *const kOpNames[] = {
#define SNN_OP_NAME(name) #name,
    SNN_OP_LIST(SNN_OP_NAME)
#undef SNN_OP_NAME
};
const char *op_name(snn::OpKind k) { return kOpNames[int(k)]; }

// The harness's models export refuses, by "<op>/<label>" (none).
const std::vector<std::string> kRefused = {};

struct ModelPtr {
    snn_model *m = nullptr;
    ~ModelPtr() { snn_model_destroy(m); }
};
struct CachePtr {
    snn_forward_cache *c = nullptr;
    ~CachePtr() { snn_forward_cache_destroy(c); }
};

// What the input of a spec is, and the dimensions after the batch that ONNX
// gives it.
struct InputKind {
    bool tokens = false, seq = false;
    int64_t steps = 0, vocab = 0;
    std::vector<int64_t> dims;
    int64_t size() const {
        int64_t n = 1;
        for (int64_t d : dims) n *= d;
        return n;
    }
};

InputKind input_kind(const snn_model *m, const std::string &spec) {
    InputKind k;
    EXPECT_EQ(snn_model_input_sequence(m, &k.steps, &k.vocab), SNN_OK);
    int64_t c = 0, h = 0, w = 0;
    EXPECT_EQ(snn_model_layer_shape(m, 0, &c, &h, &w), SNN_OK);
    // "input HxWxC ..." is an image, "input N ..." a vector.
    std::stringstream first(spec.substr(0, spec.find(';')));
    std::string word, size;
    first >> word >> size;
    k.tokens = k.vocab > 0;
    k.seq = k.steps > 0;
    if (k.tokens)
        k.dims = {h};
    else if (k.seq)
        k.dims = {h, c};
    else if (size.find('x') != std::string::npos)
        k.dims = {c, h, w};
    else
        k.dims = {c};
    return k;
}

// snn_model_create, then init with `seed` and parameters moved off their
// initial values (biases, norms' weights), so that every tensor matters.
void make_model(const char *spec, uint64_t seed, ModelPtr &out) {
    ASSERT_EQ(snn_model_create(spec, &out.m), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_model_init(out.m, seed), SNN_OK);
    size_t n = 0;
    ASSERT_EQ(snn_parameter_count(out.m, &n), SNN_OK);
    std::vector<float> p(n);
    ASSERT_EQ(snn_get_parameters(out.m, p.data(), n), SNN_OK);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> noise(-0.1f, 0.1f);
    for (float &v : p) v += noise(rng);
    ASSERT_EQ(snn_set_parameters(out.m, p.data(), n), SNN_OK);
}

std::vector<int32_t> parse_lengths(const char *text) {
    std::vector<int32_t> out;
    std::stringstream s(text);
    std::string item;
    while (std::getline(s, item, ',')) out.push_back(int32_t(std::stoi(item)));
    return out;
}

struct Inputs {
    std::vector<float> x;        // floats, or token ids as floats
    std::vector<int32_t> tokens;
};

Inputs draw_inputs(const InputKind &k, int64_t batch, std::mt19937_64 &rng) {
    Inputs in;
    const size_t n = size_t(batch * k.size());
    if (k.tokens) {
        std::uniform_int_distribution<int32_t> id(0, int32_t(k.vocab - 1));
        for (size_t i = 0; i < n; ++i) in.tokens.push_back(id(rng));
        in.tokens.front() = 0;
        in.tokens.back() = int32_t(k.vocab - 1);
    } else {
        std::uniform_real_distribution<float> u(-2.0f, 2.0f);
        for (size_t i = 0; i < n; ++i) in.x.push_back(u(rng));
    }
    return in;
}

void set_inputs(snn_forward_cache *c, const Inputs &in) {
    if (!in.tokens.empty()) {
        ASSERT_EQ(snn_set_tokens(c, in.tokens.data(), in.tokens.size()), SNN_OK) << snn_last_error();
    } else {
        ASSERT_EQ(snn_set_inputs(c, in.x.data(), in.x.size()), SNN_OK) << snn_last_error();
    }
}

// Two forward passes in training mode, so that batchnorm's running
// statistics leave their initial values.
void train_statistics(snn_model *m, const InputKind &k, std::mt19937_64 &rng) {
    CachePtr c;
    ASSERT_EQ(snn_preallocate(m, 4, &c.c), SNN_OK);
    ASSERT_EQ(snn_cache_set_training(c.c, 1), SNN_OK);
    for (int pass = 0; pass < 2; ++pass) {
        set_inputs(c.c, draw_inputs(k, 4, rng));
        ASSERT_EQ(snn_forward(c.c, m), SNN_OK) << snn_last_error();
    }
}

std::vector<float> run_snn(snn_model *m, int64_t batch, const Inputs &in, const std::vector<int32_t> *lengths) {
    CachePtr c;
    EXPECT_EQ(snn_preallocate(m, batch, &c.c), SNN_OK);
    EXPECT_EQ(snn_cache_set_training(c.c, 0), SNN_OK);
    set_inputs(c.c, in);
    if (lengths) {
        EXPECT_EQ(snn_set_lengths(c.c, lengths->data(), lengths->size()), SNN_OK) << snn_last_error();
    }
    EXPECT_EQ(snn_forward(c.c, m), SNN_OK) << snn_last_error();
    const float *y = nullptr;
    size_t count = 0;
    EXPECT_EQ(snn_outputs(c.c, &y, &count), SNN_OK);
    return std::vector<float>(y, y + count);
}

std::string export_bytes(const snn_model *m, bool lengths, snn_status *status, std::string *message) {
    snn_onnx_export_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.lengths = lengths ? 1 : 0;
    size_t size = 0;
    *status = snn_model_export_onnx_to_buffer(m, &o, nullptr, 0, &size);
    if (*status != SNN_OK) {
        *message = snn_last_error();
        return std::string();
    }
    std::string bytes(size, '\0');
    size_t written = 0;
    *status = snn_model_export_onnx_to_buffer(m, &o, &bytes[0], size, &written);
    EXPECT_EQ(written, size);
    return bytes;
}

// Whether the model takes lengths (its sequence layers keep the steps).
bool takes_lengths(snn_model *m, const InputKind &k) {
    if (!k.seq) return false;
    CachePtr c;
    EXPECT_EQ(snn_preallocate(m, 1, &c.c), SNN_OK);
    std::mt19937_64 rng(1);
    set_inputs(c.c, draw_inputs(k, 1, rng));
    const int32_t len = int32_t(k.steps);
    return snn_set_lengths(c.c, &len, 1) == SNN_OK;
}

// ---- every model exports, or is refused naming its layer -----------------------------

struct Outcome {
    bool refused = false;
    std::string message;
};

Outcome try_export(const char *spec, bool lengths) {
    ModelPtr m;
    EXPECT_EQ(snn_model_create(spec, &m.m), SNN_OK) << spec;
    Outcome out;
    if (!m.m) return out;
    snn_status st;
    std::string bytes = export_bytes(m.m, lengths, &st, &out.message);
    if (st == SNN_OK) {
        EXPECT_GT(bytes.size(), 0u);
        return out;
    }
    out.refused = true;
    EXPECT_EQ(st, SNN_ERR_UNSUPPORTED) << spec << ": " << out.message;
    EXPECT_NE(out.message.find("layer "), std::string::npos) << spec << ": " << out.message;
    return out;
}

TEST(OnnxExport, EveryHarnessModelExportsOrIsRefusedNamingTheLayer) {
    std::vector<std::string> refused;
    for (const OpCase &c : kCases) {
        const std::string id = std::string(op_name(c.op)) + "/" + c.label;
        const Outcome plain = try_export(c.spec, false);
        if (plain.refused) refused.push_back(id + ": " + plain.message);
        ModelPtr m;
        ASSERT_EQ(snn_model_create(c.spec, &m.m), SNN_OK);
        const InputKind k = input_kind(m.m, c.spec);
        if (takes_lengths(m.m, k)) {
            const Outcome with = try_export(c.spec, true);
            if (with.refused) refused.push_back(id + " (lengths): " + with.message);
        }
    }
    for (const auto &c : kKernelPaths) {
        const Outcome plain = try_export(c.spec, false);
        if (plain.refused)
            refused.push_back(std::string(op_name(c.op)) + "/" + c.label + " (kernel path): " + plain.message);
    }
    std::vector<std::string> expected;
    for (const std::string &r : kRefused) expected.push_back(r);
    std::vector<std::string> ids;
    for (const std::string &r : refused) ids.push_back(r.substr(0, r.find(':')));
    EXPECT_EQ(ids, expected) << "refused:\n" << [&] {
        std::string s;
        for (const std::string &r : refused) s += "  " + r + "\n";
        return s;
    }();
}

TEST(OnnxExport, RefusesWhatOnnxCannotExpressNamingTheLayer) {
    struct Refusal {
        const char *spec;
        bool lengths;
        const char *expected;  // in the message
    };
    const Refusal refusals[] = {
        {"input 4; dense 2", true, "not a sequence"},
        {"input seq 6x2; conv1d 2 3 stride=2; seqpool mean", true, "layer 1 (conv1d"},
    };
    for (const Refusal &r : refusals) {
        ModelPtr m;
        ASSERT_EQ(snn_model_create(r.spec, &m.m), SNN_OK) << r.spec << ": " << snn_last_error();
        snn_status st;
        std::string message;
        export_bytes(m.m, r.lengths, &st, &message);
        EXPECT_EQ(st, SNN_ERR_UNSUPPORTED) << r.spec;
        EXPECT_NE(message.find(r.expected), std::string::npos) << r.spec << ": " << message;
    }
}

TEST(OnnxExport, IsDeterministicAndTheFileIsTheBuffer) {
    ModelPtr m;
    make_model("input seq 5x4; lstm 3 bidirectional; attention heads=2 causal; seqpool max; dense 2", 7, m);
    snn_status st;
    std::string message;
    const std::string a = export_bytes(m.m, true, &st, &message);
    ASSERT_EQ(st, SNN_OK) << message;
    const std::string b = export_bytes(m.m, true, &st, &message);
    EXPECT_EQ(a, b);
    const char *tmp = getenv("TMPDIR");
    std::string path_text = std::string(tmp && *tmp ? tmp : "/tmp") + "/snn_onnx_export_XXXXXX";
    char *path = &path_text[0];
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    snn_onnx_export_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.lengths = 1;
    ASSERT_EQ(snn_model_export_onnx(m.m, &o, path), SNN_OK) << snn_last_error();
    std::ifstream f(path, std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    remove(path);
    EXPECT_EQ(file, a);
    // A smaller capacity is refused, writing nothing.
    std::string small(a.size() - 1, 'z');
    size_t size = 0;
    EXPECT_EQ(snn_model_export_onnx_to_buffer(m.m, &o, &small[0], small.size(), &size), SNN_ERR_COUNT);
    EXPECT_EQ(small, std::string(a.size() - 1, 'z'));
}

// ---- the cases for ONNX Runtime -------------------------------------------------------

void write_file(const std::string &path, const void *data, size_t bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(static_cast<const char *>(data), std::streamsize(bytes));
    ASSERT_TRUE(f.good()) << path;
}

std::string dims_json(int64_t batch, const std::vector<int64_t> &dims) {
    std::string s = "[" + std::to_string(batch);
    for (int64_t d : dims) s += ", " + std::to_string(d);
    return s + "]";
}

struct CaseRef {
    const char *spec;
    int64_t batch;
    const char *lengths;  // "3,1,4" for this batch, or null
};

// The model's parameters and state (params.bin, state.bin) and, as JSON,
// where each layer's lie: [[weight offset, weight and bias count, state
// offset, state count], ...] (a layer's weights and bias are contiguous),
// for check_models.py to compare with the initializers bit for bit.
std::string write_values(const std::string &dir, snn_model *m) {
    size_t np = 0, ns = 0;
    EXPECT_EQ(snn_parameter_count(m, &np), SNN_OK);
    EXPECT_EQ(snn_state_count(m, &ns), SNN_OK);
    std::vector<float> p(np), st(ns);
    EXPECT_EQ(snn_get_parameters(m, p.data(), np), SNN_OK);
    if (ns) {
        EXPECT_EQ(snn_get_state(m, st.data(), ns), SNN_OK);
    }
    write_file(dir + "/params.bin", p.data(), np * 4);
    write_file(dir + "/state.bin", st.data(), ns * 4);
    int64_t layers = 0;
    EXPECT_EQ(snn_model_layer_count(m, &layers), SNN_OK);
    std::string json = "[";
    for (int64_t i = 0; i < layers; ++i) {
        size_t wo = 0, wc = 0, bo = 0, bc = 0, so = 0, sc = 0;
        EXPECT_EQ(snn_model_layer_params(m, i, &wo, &wc, &bo, &bc), SNN_OK);
        EXPECT_EQ(snn_model_layer_state(m, i, &so, &sc), SNN_OK);
        if (bc) {
            EXPECT_EQ(bo, wo + wc);
        }
        json += (i ? ", [" : "[") + std::to_string(wo) + ", " + std::to_string(wc + bc) + ", " + std::to_string(so) +
                ", " + std::to_string(sc) + "]";
    }
    return json + "]";
}

// One case's folder; returns its runs as JSON objects, and in *values
// where its layers' values lie (write_values).
std::vector<std::string> write_case(const std::string &dir, const CaseRef &c, uint64_t seed, std::string *values) {
    std::vector<std::string> runs;
    ModelPtr m;
    make_model(c.spec, seed, m);
    if (!m.m) return runs;
    const InputKind k = input_kind(m.m, c.spec);
    std::mt19937_64 rng(seed * 7919 + 1);
    train_statistics(m.m, k, rng);
    *values = write_values(dir, m.m);
    const bool lengths_too = takes_lengths(m.m, k);
    for (int with_lengths = 0; with_lengths <= int(lengths_too); ++with_lengths) {
        snn_status st;
        std::string message;
        const std::string bytes = export_bytes(m.m, with_lengths != 0, &st, &message);
        EXPECT_EQ(st, SNN_OK) << c.spec << ": " << message;
        if (st != SNN_OK) continue;
        const std::string model_file = with_lengths ? "model_lengths.onnx" : "model.onnx";
        write_file(dir + "/" + model_file, bytes.data(), bytes.size());
        for (int64_t batch : {int64_t(1), c.batch > 1 ? c.batch : int64_t(2)}) {
            const Inputs in = draw_inputs(k, batch, rng);
            std::vector<int32_t> lengths;
            if (with_lengths) {
                if (c.lengths && batch == c.batch) {
                    lengths = parse_lengths(c.lengths);
                } else {
                    std::uniform_int_distribution<int32_t> len(1, int32_t(k.steps));
                    for (int64_t s = 0; s < batch; ++s) lengths.push_back(len(rng));
                }
            }
            const std::vector<float> y = run_snn(m.m, batch, in, with_lengths ? &lengths : nullptr);
            const std::string stem = std::string(with_lengths ? "lengths_" : "") + "batch" + std::to_string(batch);
            std::string run = "{\"model\": \"" + model_file + "\", \"batch\": " + std::to_string(batch);
            if (k.tokens) {
                std::vector<int64_t> ids(in.tokens.begin(), in.tokens.end());
                write_file(dir + "/" + stem + "_input.bin", ids.data(), ids.size() * 8);
                run += ", \"input_type\": \"int64\"";
            } else {
                write_file(dir + "/" + stem + "_input.bin", in.x.data(), in.x.size() * 4);
                run += ", \"input_type\": \"float32\"";
            }
            run += ", \"input\": \"" + stem + "_input.bin\", \"input_dims\": " + dims_json(batch, k.dims);
            if (with_lengths) {
                write_file(dir + "/" + stem + "_lengths.bin", lengths.data(), lengths.size() * 4);
                run += ", \"lengths\": \"" + stem + "_lengths.bin\"";
            }
            write_file(dir + "/" + stem + "_output.bin", y.data(), y.size() * 4);
            run += ", \"output\": \"" + stem + "_output.bin\", \"output_count\": " + std::to_string(y.size());
            // ONNX Runtime sums a row of 300001 values in float32 (layernorm's
            // statistics: differences up to 7e-5), where snn sums in double.
            if (k.size() > 100000) run += ", \"tolerance\": 1e-3";
            run += "}";
            runs.push_back(run);
        }
    }
    return runs;
}

// The cases: every case of kCases, then the kernel paths' models (larger
// shapes: rows longer than a block, 300x301 images, 1000 steps, several
// ops in one model) at batch 1 and at most 8.
TEST(OnnxExport, Cases) {
    const char *root = getenv("SNN_ONNX_CASES_DIR");
    if (!root || !*root) GTEST_SKIP() << "SNN_ONNX_CASES_DIR is not set: no cases written";
    mkdir(root, 0755);
    std::vector<std::pair<std::string, CaseRef>> all;
    for (const OpCase &c : kCases)
        all.push_back({std::string(op_name(c.op)) + "_" + c.label, CaseRef{c.spec, c.batch, c.lengths}});
    for (const auto &c : kKernelPaths) {
        const int64_t batch = c.batch < 8 ? c.batch : 8;
        all.push_back({std::string(op_name(c.op)) + "_path_" + c.label,
                       CaseRef{c.spec, batch, batch == c.batch ? c.lengths : nullptr}});
    }
    std::string index = "[\n";
    uint64_t seed = 1;
    for (size_t i = 0; i < all.size(); ++i) {
        const std::string &name = all[i].first;
        const std::string dir = std::string(root) + "/" + name;
        mkdir(dir.c_str(), 0755);
        std::string values = "[]";
        const std::vector<std::string> runs = write_case(dir, all[i].second, seed++, &values);
        if (HasFailure()) return;
        index += std::string(i ? ",\n" : "") + "  {\"name\": \"" + name + "\", \"spec\": \"" +
                 all[i].second.spec + "\", \"layers\": " + values + ", \"runs\": [\n    ";
        for (size_t r = 0; r < runs.size(); ++r) index += (r ? ",\n    " : "") + runs[r];
        index += "]}";
    }
    index += "\n]\n";
    write_file(std::string(root) + "/cases.json", index.data(), index.size());
}

}  // namespace
