// Resuming training: a forward cache's dropout generator state read and
// restored (snn_cache_rng_state / snn_cache_set_rng_state).
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

}  // namespace
