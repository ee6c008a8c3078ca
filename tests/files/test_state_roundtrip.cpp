// Property: every state the API can put a model in survives a save and a load
// bit for bit (model file, buffer and checkpoint), and a value that a file
// could not hold is refused where it enters, by snn_set_state, with a message
// naming the value. Parameters and running statistics hold any float (NaN,
// infinities, subnormals, -0); num_batches_tracked holds a count.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "../unit/helpers.h"
#include "snn.h"

namespace {

using namespace snn_test;

using Bytes = std::vector<unsigned char>;

// Dense, conv, batchnorm on vectors and images, layernorm, dropout, add and
// concat, with options that do not print as their defaults.
const char *const kSpecs[] = {
    "input 6; dense 5 relu; batchnorm; dropout 0.3; dense 3",
    "input 6x6x2; conv 3x3 4 pad=1; batchnorm momentum=0.3 eps=0.001; relu; maxpool 2; flatten; layernorm; dense 3",
    "input 5; dense 6 name=h; layernorm eps=1e-06; relu; add h; dense 4; batchnorm; concat h; dropout 0.5; dense 3",
    "input 4x4x3; conv 3x3 3 pad=1 name=c; batchnorm; add c; conv 1x1 2; concat c; flatten; dense 2",
};

float bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Floats at the edges: zeros of both signs, subnormals, the normal extremes,
// infinities and NaNs with sign bits and payloads.
const float kExtremes[] = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(),
                           -std::numeric_limits<float>::denorm_min(), bits(0x00654321u), FLT_MIN, -FLT_MIN,
                           FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, bits(0x7fc00000u), bits(0xffc00001u),
                           bits(0x7fc12345u), bits(0x7f800001u), 1.0f, -1.0f, 1e-30f};

// Counts a model's state holds: whole numbers in [0, 2^24], +0 for none.
const float kCounts[] = {0.0f, 1.0f, 3.0f, 1000.0f, 8388609.0f, 16777215.0f, 16777216.0f};

// What num_batches_tracked cannot hold.
const float kNotCounts[] = {-1.0f, -0.0f, 0.5f, 16777216.0f + 2.0f, 1e30f, FLT_MAX, -FLT_MAX,
                            std::numeric_limits<float>::denorm_min(), INFINITY, -INFINITY,
                            bits(0x7fc00000u), bits(0xffc00001u)};

class Rng {
public:
    explicit Rng(uint64_t seed) : s_(seed * 0x9e3779b97f4a7c15ull + 1) {}
    uint64_t next() {
        s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
        return s_ >> 17;
    }
    size_t below(size_t n) { return size_t(next() % n); }
    float normal_ish() { return float(int64_t(next() % 2000001) - 1000000) * 1e-5f; }
    // Mostly ordinary values, one in three from `edges`.
    template <size_t N>
    float pick(const float (&edges)[N]) {
        return below(3) == 0 ? edges[below(N)] : normal_ish();
    }

private:
    uint64_t s_;
};

bool bit_equal(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Indices of the state's counts: the last of each batchnorm's 2C + 1 values.
std::vector<size_t> count_indices(const snn_model *m) {
    int64_t layers = 0;
    EXPECT_EQ(snn_model_layer_count(m, &layers), SNN_OK);
    std::vector<size_t> idx;
    for (int64_t l = 1; l < layers; ++l) {
        size_t offset = 0, count = 0;
        EXPECT_EQ(snn_model_layer_state(m, l, &offset, &count), SNN_OK);
        if (count) idx.push_back(offset + count - 1);
    }
    return idx;
}

Bytes read_bytes(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

Bytes save_to_buffer(const snn_model *m) {
    size_t size = 0;
    EXPECT_EQ(snn_model_save_to_buffer(m, nullptr, 0, &size), SNN_OK) << snn_last_error();
    Bytes b(size);
    EXPECT_EQ(snn_model_save_to_buffer(m, b.data(), b.size(), &size), SNN_OK) << snn_last_error();
    return b;
}

// The model as a file, a buffer and a checkpoint loads back bit for bit.
void expect_round_trips(const snn_model *m, const std::string &dir) {
    const std::vector<float> p = get_params(m), s = get_state(m);
    const std::string file = dir + "/model.safetensors";
    ASSERT_EQ(snn_model_save(m, file.c_str()), SNN_OK) << snn_last_error();
    snn_model *loaded = nullptr;
    ASSERT_EQ(snn_model_load(file.c_str(), &loaded), SNN_OK) << snn_last_error();
    Model from_file(loaded);
    EXPECT_TRUE(bit_equal(get_params(loaded), p));
    EXPECT_TRUE(bit_equal(get_state(loaded), s));
    EXPECT_EQ(describe(loaded), describe(m));

    const Bytes b = save_to_buffer(m);
    EXPECT_EQ(b, read_bytes(file)) << "the buffer and the file hold the same bytes";
    ASSERT_EQ(snn_model_load_from_buffer(b.data(), b.size(), &loaded), SNN_OK) << snn_last_error();
    Model from_buffer(loaded);
    EXPECT_TRUE(bit_equal(get_params(loaded), p));
    EXPECT_TRUE(bit_equal(get_state(loaded), s));
}

// A scratch directory per test.
class StateRoundTrip : public ::testing::Test {
protected:
    void SetUp() override {
        const char *base = getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/snn-state-XXXXXX";
        ASSERT_NE(mkdtemp(&tmpl[0]), nullptr);
        dir = tmpl;
    }
    void TearDown() override {
        for (const char *name : {"model.safetensors", "ckpt.safetensors", "again.safetensors"})
            unlink((dir + "/" + name).c_str());
        rmdir(dir.c_str());
    }
    std::string dir;
};

TEST_F(StateRoundTrip, EveryStateSetThroughTheApiSavesAndLoadsBitForBit) {
    Rng rng(2024);
    for (const char *spec : kSpecs) {
        SCOPED_TRACE(spec);
        Model model = make_model(spec);
        const std::vector<size_t> counts = count_indices(model.get());
        for (int round = 0; round < 12; ++round) {
            SCOPED_TRACE("round " + std::to_string(round));
            std::vector<float> p = get_params(model.get()), s = get_state(model.get());
            for (float &v : p) v = rng.pick(kExtremes);
            for (float &v : s) v = rng.pick(kExtremes);
            for (size_t i : counts) s[i] = kCounts[rng.below(std::size(kCounts))];
            // Every extreme value appears once per round somewhere.
            for (size_t k = 0; k < std::size(kExtremes) && k < p.size(); ++k) p[rng.below(p.size())] = kExtremes[k];
            ASSERT_EQ(snn_set_parameters(model.get(), p.data(), p.size()), SNN_OK) << snn_last_error();
            ASSERT_EQ(snn_set_state(model.get(), s.data(), s.size()), SNN_OK) << snn_last_error();
            EXPECT_TRUE(bit_equal(get_params(model.get()), p));
            EXPECT_TRUE(bit_equal(get_state(model.get()), s));
            expect_round_trips(model.get(), dir);
        }
    }
}

// After training steps from extreme parameters and state (NaNs spread, counts
// at 2^24 stay there), a checkpoint loads back to a model and an optimiser
// that save the very same bytes again.
TEST_F(StateRoundTrip, CheckpointsAfterStepsFromExtremeStatesLoadBitForBit) {
    Rng rng(7);
    const snn_optimiser_kind kinds[] = {SNN_OPTIMISER_SGD, SNN_OPTIMISER_ADAM, SNN_OPTIMISER_ADAMW,
                                        SNN_OPTIMISER_RMSPROP};
    for (const char *spec : kSpecs) {
        for (snn_optimiser_kind kind : kinds) {
            SCOPED_TRACE(std::string(spec) + " / optimiser " + std::to_string(kind));
            Model model = make_model(spec);
            std::vector<float> p = get_params(model.get()), s = get_state(model.get());
            for (float &v : p) v = rng.pick(kExtremes);
            for (float &v : s) v = rng.pick(kExtremes);
            for (size_t i : count_indices(model.get())) s[i] = kCounts[rng.below(std::size(kCounts))];
            ASSERT_EQ(snn_set_parameters(model.get(), p.data(), p.size()), SNN_OK) << snn_last_error();
            ASSERT_EQ(snn_set_state(model.get(), s.data(), s.size()), SNN_OK) << snn_last_error();

            snn_optimiser *o = nullptr;
            ASSERT_EQ(snn_optimiser_create(model.get(), kind, &o), SNN_OK);
            Optimiser opt(o);
            snn_forward_cache *fc = nullptr;
            snn_backward_cache *bc = nullptr;
            ASSERT_EQ(snn_preallocate(model.get(), 3, &fc), SNN_OK);
            ASSERT_EQ(snn_preallocate_grads(model.get(), 3, &bc), SNN_OK);
            Forward f(fc);
            Backward b(bc);
            size_t features = 0, outputs = 0;
            snn_model_input_size(model.get(), &features);
            snn_model_output_size(model.get(), &outputs);
            for (int step = 0; step < 3; ++step) {
                std::vector<float> x(3 * features);
                for (float &v : x) v = rng.normal_ish();
                const int32_t labels[3] = {0, int32_t(outputs - 1), 1};
                ASSERT_EQ(snn_set_inputs(f.get(), x.data(), x.size()), SNN_OK) << snn_last_error();
                ASSERT_EQ(snn_set_labels(b.get(), labels, 3), SNN_OK) << snn_last_error();
                ASSERT_EQ(snn_forward(f.get(), model.get()), SNN_OK) << snn_last_error();
                ASSERT_EQ(snn_backprop(b.get(), f.get(), model.get(), SNN_LOSS_LOGIT_CROSSENTROPY, nullptr), SNN_OK)
                    << snn_last_error();
                ASSERT_EQ(snn_optimiser_step(opt.get(), model.get(), b.get()), SNN_OK) << snn_last_error();
            }
            const std::string ckpt = dir + "/ckpt.safetensors", again = dir + "/again.safetensors";
            ASSERT_EQ(snn_checkpoint_save(model.get(), opt.get(), ckpt.c_str()), SNN_OK) << snn_last_error();
            snn_model *lm = nullptr;
            snn_optimiser *lo = nullptr;
            ASSERT_EQ(snn_checkpoint_load(ckpt.c_str(), &lm, &lo), SNN_OK) << snn_last_error();
            Model loaded(lm);
            Optimiser loaded_opt(lo);
            EXPECT_TRUE(bit_equal(get_params(lm), get_params(model.get())));
            EXPECT_TRUE(bit_equal(get_state(lm), get_state(model.get())));
            ASSERT_EQ(snn_checkpoint_save(lm, lo, again.c_str()), SNN_OK) << snn_last_error();
            EXPECT_EQ(read_bytes(again), read_bytes(ckpt));
            expect_round_trips(model.get(), dir);
        }
    }
}

TEST_F(StateRoundTrip, ACountAFileCannotHoldIsRefusedBySetState) {
    for (const char *spec : kSpecs) {
        SCOPED_TRACE(spec);
        Model model = make_model(spec);
        const std::vector<float> before = get_state(model.get());
        for (size_t i : count_indices(model.get())) {
            for (float bad : kNotCounts) {
                std::vector<float> s = before;
                s[i] = bad;
                SCOPED_TRACE("src[" + std::to_string(i) + "] = " + std::to_string(bad));
                EXPECT_EQ(snn_set_state(model.get(), s.data(), s.size()), SNN_ERR_INVALID_ARGUMENT);
                const std::string msg = snn_last_error();
                EXPECT_NE(msg.find("snn_set_state: src[" + std::to_string(i) + "]"), std::string::npos) << msg;
                EXPECT_NE(msg.find("num_batches_tracked"), std::string::npos) << msg;
                EXPECT_NE(msg.find("whole number in [0, 16777216]"), std::string::npos) << msg;
                EXPECT_TRUE(bit_equal(get_state(model.get()), before)) << "a refused call changes nothing";
            }
        }
        expect_round_trips(model.get(), dir);
    }
}

// A GPU model checks values on the host before they are uploaded, and its
// files hold what the CPU's hold. Skipped without a usable GPU.
TEST_F(StateRoundTrip, AGpuModelFollowsTheSameRules) {
    if (snn_gpu_status(0) != SNN_OK) GTEST_SKIP() << "no usable GPU: " << snn_last_error();
    Rng rng(99);
    Model model = make_model(kSpecs[1]);
    ASSERT_EQ(snn_to_gpu(model.get(), 0), SNN_OK) << snn_last_error();
    std::vector<float> p = get_params(model.get()), s = get_state(model.get());
    for (float &v : p) v = rng.pick(kExtremes);
    for (float &v : s) v = rng.pick(kExtremes);
    const std::vector<size_t> counts = count_indices(model.get());
    for (size_t i : counts) s[i] = 16777216.0f;
    ASSERT_EQ(snn_set_parameters(model.get(), p.data(), p.size()), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_set_state(model.get(), s.data(), s.size()), SNN_OK) << snn_last_error();
    expect_round_trips(model.get(), dir);
    std::vector<float> bad = s;
    bad[counts[0]] = -1.0f;
    EXPECT_EQ(snn_set_state(model.get(), bad.data(), bad.size()), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(bit_equal(get_state(model.get()), s));
}

// Overwrites the I64 value of tensor `name` in a model file's bytes.
void poke_i64(Bytes &file, const std::string &name, int64_t value) {
    uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = (header << 8) | file[size_t(i)];
    const std::string json(file.begin() + 8, file.begin() + 8 + long(header));
    const size_t at = json.find("\"" + name + "\"");
    ASSERT_NE(at, std::string::npos) << name;
    unsigned long long begin = 0, end = 0;
    const size_t offsets = json.find("\"data_offsets\":[", at);
    ASSERT_EQ(sscanf(json.c_str() + offsets, "\"data_offsets\":[%llu,%llu]", &begin, &end), 2);
    ASSERT_EQ(end - begin, 8u);
    for (int q = 0; q < 8; ++q) file[8 + header + begin + size_t(q)] = (unsigned char)(uint64_t(value) >> (8 * q));
}

// A file agrees with the setter: a negative count is refused naming it, and a
// count above 2^24 (PyTorch counts in int64) is held as 2^24.
TEST_F(StateRoundTrip, AFilesCountsFollowTheSameRule) {
    Model model = make_model("input 3; dense 2; batchnorm");
    Bytes b = save_to_buffer(model.get());
    poke_i64(b, "layers.2.num_batches_tracked", -1);
    snn_model *loaded = nullptr;
    EXPECT_EQ(snn_model_load_from_buffer(b.data(), b.size(), &loaded), SNN_ERR_FILE_FORMAT);
    EXPECT_EQ(loaded, nullptr);
    const std::string msg = snn_last_error();
    EXPECT_NE(msg.find("layer 2's num_batches_tracked"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is -1"), std::string::npos) << msg;

    poke_i64(b, "layers.2.num_batches_tracked", int64_t(1) << 40);
    ASSERT_EQ(snn_model_load_from_buffer(b.data(), b.size(), &loaded), SNN_OK) << snn_last_error();
    Model big(loaded);
    EXPECT_EQ(get_state(loaded).back(), 16777216.0f);
}

}  // namespace
