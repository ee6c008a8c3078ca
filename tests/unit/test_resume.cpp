// Resuming training: a forward cache's dropout generator state read and
// restored (snn_cache_rng_state / snn_cache_set_rng_state), and training of
// a model with dropout resumed from a checkpoint bit for bit.
#include <stdlib.h>
#include <unistd.h>

#include "helpers.h"

namespace {

using namespace snn_test;

// Restoring the state read after some passes makes the next passes draw the
// same masks, in the same cache or in another one; inference passes do not
// advance the generator.
TEST(RngState, RestoredStateRepeatsTheMasks) {
    Model model = make_model("input 50; dropout 0.5");
    Forward a = make_forward(model.get(), 4), b = make_forward(model.get(), 4);
    const std::vector<float> x(200, 1.0f);
    ASSERT_EQ(snn_cache_set_seed(a.get(), 123), SNN_OK);
    run(a.get(), model.get(), x);
    run(a.get(), model.get(), x);
    uint64_t seed = 0, passes = 0;
    ASSERT_EQ(snn_cache_rng_state(a.get(), &seed, &passes), SNN_OK);
    EXPECT_EQ(seed, 123u);
    EXPECT_EQ(passes, 2u);
    ASSERT_EQ(snn_cache_set_training(a.get(), 0), SNN_OK);
    run(a.get(), model.get(), x);
    ASSERT_EQ(snn_cache_set_training(a.get(), 1), SNN_OK);
    const std::vector<float> third = run(a.get(), model.get(), x);
    const std::vector<float> fourth = run(a.get(), model.get(), x);
    EXPECT_NE(third, fourth);

    ASSERT_EQ(snn_cache_set_rng_state(b.get(), seed, passes), SNN_OK);
    EXPECT_EQ(run(b.get(), model.get(), x), third);
    EXPECT_EQ(run(b.get(), model.get(), x), fourth);
    ASSERT_EQ(snn_cache_set_rng_state(a.get(), seed, passes), SNN_OK);
    EXPECT_EQ(run(a.get(), model.get(), x), third);

    ASSERT_EQ(snn_cache_set_rng_state(b.get(), 123, 0), SNN_OK);
    ASSERT_EQ(snn_cache_set_seed(a.get(), 123), SNN_OK);
    EXPECT_EQ(run(b.get(), model.get(), x), run(a.get(), model.get(), x));
}

// The pass count never wraps: at 2^64 - 1 a training pass, which would draw
// pass 0's masks again, is refused and counts nothing; inference passes
// still run; a new seed restarts the count.
TEST(RngState, TheLastPassCountRefusesATrainingPass) {
    Model model = make_model("input 50; dropout 0.5");
    Forward f = make_forward(model.get(), 4);
    const std::vector<float> x(200, 1.0f);
    ASSERT_EQ(snn_set_inputs(f.get(), x.data(), x.size()), SNN_OK);
    ASSERT_EQ(snn_cache_set_rng_state(f.get(), 7, UINT64_MAX - 1), SNN_OK);
    ASSERT_EQ(snn_forward(f.get(), model.get()), SNN_OK) << snn_last_error();
    uint64_t seed = 0, passes = 0;
    ASSERT_EQ(snn_cache_rng_state(f.get(), &seed, &passes), SNN_OK);
    EXPECT_EQ(passes, UINT64_MAX);
    EXPECT_EQ(snn_forward(f.get(), model.get()), SNN_ERR_STATE);
    EXPECT_NE(std::string(snn_last_error()).find("counted 2^64 - 1 training passes"), std::string::npos)
        << snn_last_error();
    ASSERT_EQ(snn_cache_rng_state(f.get(), &seed, &passes), SNN_OK);
    EXPECT_EQ(seed, 7u);
    EXPECT_EQ(passes, UINT64_MAX);
    ASSERT_EQ(snn_cache_set_training(f.get(), 0), SNN_OK);
    EXPECT_EQ(snn_forward(f.get(), model.get()), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_cache_set_training(f.get(), 1), SNN_OK);
    ASSERT_EQ(snn_cache_set_seed(f.get(), 7), SNN_OK);
    EXPECT_EQ(snn_forward(f.get(), model.get()), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_cache_rng_state(f.get(), &seed, &passes), SNN_OK);
    EXPECT_EQ(passes, 1u);
}

TEST(RngState, NullArgumentsAreRefused) {
    Model model = make_model("input 2; dropout 0.5");
    Forward f = make_forward(model.get(), 1);
    uint64_t seed = 0, passes = 0;
    EXPECT_EQ(snn_cache_rng_state(nullptr, &seed, &passes), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_cache_rng_state(f.get(), nullptr, &passes), SNN_ERR_NULL_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("snn_cache_rng_state"), std::string::npos);
    EXPECT_NE(std::string(snn_last_error()).find("seed"), std::string::npos);
    EXPECT_EQ(snn_cache_rng_state(f.get(), &seed, nullptr), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_cache_set_rng_state(nullptr, 1, 2), SNN_ERR_NULL_ARGUMENT);
}

// Training of a model with dropout and batchnorm: `steps` mini-batches of 4
// from step `first` on, through one pair of caches.
struct Trainer {
    Forward f;
    Backward b;
    explicit Trainer(snn_model *m) : f(make_forward(m, 4)), b(make_backward(m, 4)) {}
    void train(snn_model *m, snn_optimiser *opt, int first, int steps) {
        const size_t features = input_size(m);
        for (int step = first; step < first + steps; ++step) {
            Random rng{uint64_t(step)};
            const std::vector<float> x = rng.uniform_vector(4 * features, -1.0f, 1.0f);
            const int32_t labels[4] = {step % 3, (step + 1) % 3, 2, 0};
            ASSERT_EQ(snn_set_inputs(f.get(), x.data(), x.size()), SNN_OK);
            ASSERT_EQ(snn_set_labels(b.get(), labels, 4), SNN_OK);
            ASSERT_EQ(snn_forward(f.get(), m), SNN_OK) << snn_last_error();
            ASSERT_EQ(snn_backprop(b.get(), f.get(), m, SNN_LOSS_LOGIT_CROSSENTROPY, nullptr), SNN_OK)
                << snn_last_error();
            ASSERT_EQ(snn_optimiser_step(opt, m, b.get()), SNN_OK) << snn_last_error();
        }
    }
};

std::string temp_path(const char *name) {
    const char *base = getenv("TMPDIR");
    return std::string(base && *base ? base : "/tmp") + "/" + name + "-" + std::to_string(getpid());
}

// The procedure snn.h gives next to snn_checkpoint_save: save the checkpoint
// and the training cache's rng state; later, load the checkpoint, make new
// caches and restore the rng state. Eight steps in one run equal three,
// a checkpoint, and five in a fresh setup, bit for bit; without the rng state
// the masks of the resumed steps repeat the first ones and training diverges.
TEST(RngState, TrainingWithDropoutResumesFromACheckpointBitForBit) {
    const char *spec = "input 6; dense 8 relu; batchnorm; dropout 0.3; dense 3";
    Model whole = make_model(spec);
    ASSERT_EQ(snn_model_init(whole.get(), 5), SNN_OK);
    Optimiser whole_opt = make_optimiser(whole.get(), SNN_OPTIMISER_ADAM);
    Trainer whole_run(whole.get());
    ASSERT_EQ(snn_cache_set_seed(whole_run.f.get(), 2024), SNN_OK);
    whole_run.train(whole.get(), whole_opt.get(), 0, 8);

    Model first = make_model(spec);
    ASSERT_EQ(snn_model_init(first.get(), 5), SNN_OK);
    Optimiser first_opt = make_optimiser(first.get(), SNN_OPTIMISER_ADAM);
    Trainer first_run(first.get());
    ASSERT_EQ(snn_cache_set_seed(first_run.f.get(), 2024), SNN_OK);
    first_run.train(first.get(), first_opt.get(), 0, 3);
    const std::string path = temp_path("snn-resume.safetensors");
    ASSERT_EQ(snn_checkpoint_save(first.get(), first_opt.get(), path.c_str()), SNN_OK) << snn_last_error();
    uint64_t seed = 0, passes = 0;
    ASSERT_EQ(snn_cache_rng_state(first_run.f.get(), &seed, &passes), SNN_OK);
    EXPECT_EQ(passes, 3u);

    auto resume = [&](bool restore_rng) {
        snn_model *m = nullptr;
        snn_optimiser *o = nullptr;
        EXPECT_EQ(snn_checkpoint_load(path.c_str(), &m, &o), SNN_OK) << snn_last_error();
        Model model(m);
        Optimiser opt(o);
        Trainer run(m);
        if (restore_rng) {
            EXPECT_EQ(snn_cache_set_rng_state(run.f.get(), seed, passes), SNN_OK);
        }
        run.train(m, o, 3, 5);
        return std::make_pair(get_params(m), get_state(m));
    };
    const auto resumed = resume(true);
    EXPECT_EQ(resumed.first, get_params(whole.get()));
    EXPECT_EQ(resumed.second, get_state(whole.get()));
    EXPECT_NE(resume(false).first, get_params(whole.get()));
    unlink(path.c_str());
}

}  // namespace
