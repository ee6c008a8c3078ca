// The largest model a spec may declare: SNN_MAX_LAYERS layers after the
// input, every one named, a residual link every second layer. It is created,
// preallocated, run forward and backward, described, saved and loaded. The
// test's meson timeout is the check on time: each of these steps used to take
// time quadratic in the number of layers (minutes for this model).
#include <string>
#include <vector>

#include "helpers.h"

using namespace snn_test;

namespace {

// input 4 name=r0; dense 4 relu init=zeros name=d1; add r0 name=r1;
// dense 4 relu init=zeros name=d2; add r1 name=r2; ... in canonical form.
std::string largest_spec() {
    std::string spec = "input 4 name=r0";
    for (int i = 1; i <= SNN_MAX_LAYERS; ++i) {
        const std::string block = std::to_string((i + 1) / 2);
        spec += i % 2 ? "; dense 4 relu init=zeros name=d" + block
                      : "; add r" + std::to_string((i + 1) / 2 - 1) + " name=r" + block;
    }
    return spec;
}

// Each block adds relu(0 x + 0) = 0 to its input, so the model is the
// identity and the gradient reaches the input unchanged. A value whose
// memory was reused while an add still had to read it would change both.
TEST(SpecScale, TheLargestModelIsBuiltRunSavedAndLoaded) {
    const std::string spec = largest_spec();
    Model m = make_model(spec);
    int64_t layers = 0;
    ASSERT_EQ(snn_model_layer_count(m.get(), &layers), SNN_OK);
    EXPECT_EQ(layers, SNN_MAX_LAYERS + 1);
    EXPECT_EQ(describe(m.get()), spec);

    Forward f = make_forward(m.get(), 2);
    Backward b = make_backward(m.get(), 2);
    const std::vector<float> x = {1, -2, 3, -4, 5, -6, 7, -8};
    EXPECT_EQ(run(f.get(), m.get(), x), x);
    ASSERT_EQ(snn_set_input_gradient(b.get(), 1), SNN_OK);
    const std::vector<float> dy = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_EQ(snn_backprop_with_output_gradient(b.get(), f.get(), m.get(), dy.data(), dy.size()), SNN_OK)
        << snn_last_error();
    std::vector<float> dx(dy.size());
    ASSERT_EQ(snn_get_input_gradients(b.get(), dx.data(), dx.size()), SNN_OK);
    EXPECT_EQ(dx, dy);

    size_t size = 0;
    ASSERT_EQ(snn_model_save_to_buffer(m.get(), nullptr, 0, &size), SNN_OK);
    std::vector<unsigned char> file(size);
    ASSERT_EQ(snn_model_save_to_buffer(m.get(), file.data(), file.size(), &size), SNN_OK);
    snn_model *loaded = nullptr;
    ASSERT_EQ(snn_model_load_from_buffer(file.data(), file.size(), &loaded), SNN_OK) << snn_last_error();
    Model back(loaded);
    EXPECT_EQ(describe(back.get()), spec);
    EXPECT_EQ(get_params(back.get()), get_params(m.get()));

    // One layer more is refused, at its position.
    std::string msg;
    snn_model *over = nullptr;
    const std::string beyond = spec + "; relu";
    EXPECT_EQ(snn_model_create(beyond.c_str(), &over), SNN_ERR_SPEC);
    EXPECT_EQ(over, nullptr);
    EXPECT_NE(std::string(snn_last_error()).find("spec position " + std::to_string(spec.size() + 3) +
                                                 " ('relu'): a model has at most 100000 layers"),
              std::string::npos)
        << snn_last_error();
}

// A header of more than 2^20 entries (far above the 5 tensors per layer of
// the largest model) is refused while it is read, before it is checked.
TEST(SpecScale, AFileHeaderOfTooManyEntriesIsRefused) {
    std::string json = "{";
    for (int i = 0; i <= 1 << 20; ++i) json += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":0";
    json += "}";
    std::vector<unsigned char> file(8, 0);
    for (int i = 0; i < 8; ++i) file[size_t(i)] = (unsigned char)((json.size() >> (8 * i)) & 0xff);
    file.insert(file.end(), json.begin(), json.end());
    snn_model *m = nullptr;
    EXPECT_EQ(snn_model_load_from_buffer(file.data(), file.size(), &m), SNN_ERR_FILE_FORMAT);
    EXPECT_EQ(m, nullptr);
    EXPECT_NE(std::string(snn_last_error()).find("the JSON header has more than 1048576 entries"), std::string::npos)
        << snn_last_error();
}

}  // namespace
