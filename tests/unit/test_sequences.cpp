// Sequence models through the C API: the sequence input statements, lengths
// (who may set them, when, and that padded steps change nothing they must
// not), labels per step of a sequence output, and token data sets' checks.
// The ops' own values are the op harness's (tests/ops).
#include <gtest/gtest.h>
#include <snn.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "helpers.h"

namespace {

using namespace snn_test;
using Floats = std::vector<float>;
using Ints = std::vector<int32_t>;

// A sequence model of 4 steps of 3 features with an output per step.
constexpr const char *kPerStep = "input seq 4x3; dense 5 tanh; layernorm; dense 6";

struct Pass {
    float loss = 0.0f;
    Floats grads;
};

// One forward and backward pass with cross-entropy over the labels.
Pass xent_pass(const snn_model *m, const Floats &x, const Ints &lengths, const Ints &labels, int64_t batch) {
    Forward fwd = make_forward(m, batch);
    Backward bwd = make_backward(m, batch);
    EXPECT_EQ(snn_set_inputs(fwd.get(), x.data(), x.size()), SNN_OK) << snn_last_error();
    if (!lengths.empty()) {
        EXPECT_EQ(snn_set_lengths(fwd.get(), lengths.data(), lengths.size()), SNN_OK) << snn_last_error();
    }
    EXPECT_EQ(snn_set_labels(bwd.get(), labels.data(), labels.size()), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_forward(fwd.get(), m), SNN_OK) << snn_last_error();
    Pass p;
    EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), m, SNN_LOSS_LOGIT_CROSSENTROPY, &p.loss), SNN_OK)
        << snn_last_error();
    p.grads = gradients(bwd.get(), m);
    return p;
}

Floats inputs(size_t count, float scale = 1.0f) {
    Floats x(count);
    for (size_t i = 0; i < count; ++i) x[i] = scale * std::sin(0.7f * float(i) + 0.3f);
    return x;
}

TEST(SequenceSpec, InputStatementsAndTheirShapes) {
    struct Row {
        const char *spec;
        int64_t steps, vocab;
        size_t in, out;
    } rows[] = {
        {"input 8; dense 2", 0, 0, 8, 2},
        {"input 4x4x2; flatten; dense 2", 0, 0, 32, 2},
        {"input seq 7x3; dense 2", 7, 0, 21, 14},
        {"input seq 7x3; flatten; dense 2", 7, 0, 21, 2},
    };
    for (const Row &r : rows) {
        Model m = make_model(r.spec);
        int64_t steps = -1, vocab = -1;
        ASSERT_EQ(snn_model_input_sequence(m.get(), &steps, &vocab), SNN_OK);
        EXPECT_EQ(steps, r.steps) << r.spec;
        EXPECT_EQ(vocab, r.vocab) << r.spec;
        EXPECT_EQ(input_size(m.get()), r.in) << r.spec;
        EXPECT_EQ(output_size(m.get()), r.out) << r.spec;
        EXPECT_EQ(describe(m.get()), r.spec);
        int64_t c = 0, h = 0, w = 0;
        ASSERT_EQ(snn_model_layer_shape(m.get(), 0, &c, &h, &w), SNN_OK);
        if (r.steps) {  // F x T x 1
            EXPECT_EQ(c, 3);
            EXPECT_EQ(h, 7);
            EXPECT_EQ(w, 1);
        }
    }
}

TEST(SequenceSpec, ErrorsNameTheFix) {
    struct Row {
        const char *spec;
        snn_status status;
        const char *message;
    } rows[] = {
        {"input seq 7; dense 2", SNN_ERR_SPEC, "input seq takes TxF"},
        {"input seq 0x3; dense 2", SNN_ERR_SPEC, "input seq takes TxF"},
        {"input seq 2x3x4; dense 2", SNN_ERR_SPEC, "input seq takes TxF"},
        {"input tokens 5; dense 2", SNN_ERR_SPEC, "needs vocab=V"},
        {"input tokens 5 vocab=0; dense 2", SNN_ERR_SPEC, "vocab must be an integer in [1, 2^24]"},
        {"input tokens 5 vocab=16777217; dense 2", SNN_ERR_SPEC, "vocab must be an integer in [1, 2^24]"},
        {"input tokens 5 vocab=3 size=2; dense 2", SNN_ERR_SPEC, "vocab=V"},
        {"input tokens 5 vocab=30; dense 2", SNN_ERR_SHAPE, "add 'embedding D'"},
        {"input tokens 5 vocab=30; relu", SNN_ERR_SHAPE, "add 'embedding D'"},
        {"input seq 5x3; conv 3 4", SNN_ERR_SHAPE, "is a sequence, which conv does not take"},
        {"input seq 5x3; batchnorm", SNN_ERR_SHAPE, "is a sequence, which batchnorm does not take"},
        {"input seq 5x3; maxpool 2", SNN_ERR_SHAPE, "is a sequence"},
        {"input seq 5x3; globalavgpool", SNN_ERR_SHAPE, "is a sequence"},
        {"input seq 5x3 name=a; dense 3; concat a", SNN_ERR_SHAPE, "is a sequence, which concat does not take"},
        {"input seq 5x3 name=a; flatten; add a", SNN_ERR_SHAPE, "the shapes differ"},
    };
    for (const Row &r : rows) {
        snn_model *m = nullptr;
        EXPECT_EQ(snn_model_create(r.spec, &m), r.status) << r.spec;
        EXPECT_NE(std::string(snn_last_error()).find(r.message), std::string::npos)
            << r.spec << ": " << snn_last_error();
        EXPECT_EQ(m, nullptr);
    }
}

// Values at a padded step, their labels, and nothing else change nothing:
// the loss and every gradient are the same.
TEST(Lengths, PaddedStepsChangeNothing) {
    Model m = make_model(kPerStep);
    const int64_t batch = 3;
    const Ints lengths = {4, 1, 3};
    Floats x = inputs(size_t(batch) * 12);
    Ints labels = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
    const Pass a = xent_pass(m.get(), x, lengths, labels, batch);
    for (int64_t s = 0; s < batch; ++s)
        for (int64_t t = lengths[size_t(s)]; t < 4; ++t) {
            for (int64_t f = 0; f < 3; ++f) x[size_t((s * 4 + t) * 3 + f)] = 1e4f;
            labels[size_t(s * 4 + t)] = 5 - labels[size_t(s * 4 + t)];
        }
    const Pass b = xent_pass(m.get(), x, lengths, labels, batch);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.grads, b.grads);
    // Without lengths the same values do count.
    const Pass c = xent_pass(m.get(), x, {}, labels, batch);
    EXPECT_GT(std::fabs(c.loss - b.loss), 1e-3f);
}

// The loss is the mean over the counted steps: -1 labels and padded steps
// are left out of the denominator too. A batch of one full step each, and
// the same steps inside longer padded samples, give the same loss.
TEST(Lengths, TheLossAveragesOverCountedSteps) {
    Model m = make_model("input seq 3x2; dense 4");
    Floats params(param_count(m.get()));
    for (size_t i = 0; i < params.size(); ++i) params[i] = 0.1f * float(i % 7) - 0.3f;
    ASSERT_EQ(snn_set_parameters(m.get(), params.data(), params.size()), SNN_OK);
    const Floats x = inputs(2 * 6);
    // Sample 0: steps 0 and 1 count (step 2 padded); sample 1: step 0 only
    // (step 1 labelled -1, step 2 padded).
    const Pass padded = xent_pass(m.get(), x, {2, 2}, {1, 2, 3, 0, -1, 2}, 2);
    // The same three steps, the others ignored by labels alone.
    const Pass ignored = xent_pass(m.get(), x, {}, {1, 2, -1, 0, -1, -1}, 2);
    EXPECT_FLOAT_EQ(padded.loss, ignored.loss);
    EXPECT_EQ(padded.grads, ignored.grads);
    // Every step ignored: loss 0 and no gradient.
    const Pass none = xent_pass(m.get(), x, {1, 1}, {-1, 2, 3, -1, 1, 1}, 2);
    EXPECT_EQ(none.loss, 0.0f);
    for (float g : none.grads) EXPECT_EQ(g, 0.0f);
}

TEST(Lengths, RefusedWhereTheyMeanNothing) {
    Model vec = make_model("input 6; dense 2");
    Forward vf = make_forward(vec.get(), 2);
    const Floats xv = inputs(12);
    ASSERT_EQ(snn_set_inputs(vf.get(), xv.data(), xv.size()), SNN_OK);
    const Ints two = {1, 1};
    EXPECT_EQ(snn_set_lengths(vf.get(), two.data(), two.size()), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(snn_last_error()).find("not a sequence"), std::string::npos) << snn_last_error();

    Model m = make_model(kPerStep);
    Forward fwd = make_forward(m.get(), 3);
    const Ints three = {4, 2, 1};
    // Before any inputs.
    EXPECT_EQ(snn_set_lengths(fwd.get(), three.data(), three.size()), SNN_ERR_STATE);
    const Floats x = inputs(36);
    ASSERT_EQ(snn_set_inputs(fwd.get(), x.data(), x.size()), SNN_OK);
    EXPECT_EQ(snn_set_lengths(fwd.get(), two.data(), two.size()), SNN_ERR_COUNT);
    EXPECT_EQ(snn_set_lengths(fwd.get(), nullptr, 3), SNN_ERR_NULL_ARGUMENT);
    for (int32_t bad : {0, 5, -1}) {
        const Ints l = {4, bad, 1};
        EXPECT_EQ(snn_set_lengths(fwd.get(), l.data(), l.size()), SNN_ERR_INVALID_ARGUMENT) << bad;
        EXPECT_NE(std::string(snn_last_error()).find("outside [1, 4]"), std::string::npos) << snn_last_error();
    }
    const int64_t idx[3] = {2, 0, 7};
    EXPECT_EQ(snn_set_lengths_gather(fwd.get(), three.data(), 3, idx, 3), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_set_lengths_gather(fwd.get(), three.data(), 3, idx, 2), SNN_ERR_COUNT);
    const int64_t ok_idx[3] = {2, 0, 1};
    EXPECT_EQ(snn_set_lengths_gather(fwd.get(), three.data(), 3, ok_idx, 3), SNN_OK) << snn_last_error();
}

// Lengths gathered by index equal the same lengths set in order.
TEST(Lengths, GatherEqualsACopy) {
    Model m = make_model(kPerStep);
    const Floats x = inputs(36);
    const Ints all = {3, 1, 4, 2};
    const int64_t idx[3] = {3, 0, 1};
    Forward a = make_forward(m.get(), 3), b = make_forward(m.get(), 3);
    Backward ba = make_backward(m.get(), 3), bb = make_backward(m.get(), 3);
    const Ints labels = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
    ASSERT_EQ(snn_set_inputs(a.get(), x.data(), x.size()), SNN_OK);
    ASSERT_EQ(snn_set_inputs(b.get(), x.data(), x.size()), SNN_OK);
    ASSERT_EQ(snn_set_lengths_gather(a.get(), all.data(), all.size(), idx, 3), SNN_OK);
    const Ints copied = {2, 3, 1};
    ASSERT_EQ(snn_set_lengths(b.get(), copied.data(), copied.size()), SNN_OK);
    float la = 0, lb = 0;
    for (auto [f, bw, l] : {std::tuple{a.get(), ba.get(), &la}, std::tuple{b.get(), bb.get(), &lb}}) {
        ASSERT_EQ(snn_set_labels(bw, labels.data(), labels.size()), SNN_OK);
        ASSERT_EQ(snn_forward(f, m.get()), SNN_OK);
        ASSERT_EQ(snn_backprop(bw, f, m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, l), SNN_OK);
    }
    EXPECT_EQ(la, lb);
}

// New inputs reset the lengths; lengths set after a pass are new inputs to
// backprop.
TEST(Lengths, NewInputsResetThemAndBackpropSeesThem) {
    Model m = make_model(kPerStep);
    const Floats x = inputs(24);
    const Ints labels = {0, 1, 2, 3, 4, 5, 0, 1};
    const Ints lengths = {1, 2};
    Forward fwd = make_forward(m.get(), 2);
    Backward bwd = make_backward(m.get(), 2);
    ASSERT_EQ(snn_set_labels(bwd.get(), labels.data(), labels.size()), SNN_OK);
    float with = 0, reset = 0;
    ASSERT_EQ(snn_set_inputs(fwd.get(), x.data(), x.size()), SNN_OK);
    ASSERT_EQ(snn_set_lengths(fwd.get(), lengths.data(), lengths.size()), SNN_OK);
    ASSERT_EQ(snn_forward(fwd.get(), m.get()), SNN_OK);
    ASSERT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &with), SNN_OK);
    ASSERT_EQ(snn_set_inputs(fwd.get(), x.data(), x.size()), SNN_OK);
    ASSERT_EQ(snn_forward(fwd.get(), m.get()), SNN_OK);
    ASSERT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &reset), SNN_OK);
    const Pass full = xent_pass(m.get(), x, {}, labels, 2);
    EXPECT_EQ(reset, full.loss);
    EXPECT_NE(reset, with);
    ASSERT_EQ(snn_set_lengths(fwd.get(), lengths.data(), lengths.size()), SNN_OK);
    EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, nullptr), SNN_ERR_STATE);
    EXPECT_NE(std::string(snn_last_error()).find("snn_set_lengths replaced the inputs"), std::string::npos)
        << snn_last_error();
}

TEST(Lengths, TargetLossesRefusePaddedSteps) {
    Model m = make_model(kPerStep);
    Forward fwd = make_forward(m.get(), 2);
    Backward bwd = make_backward(m.get(), 2);
    const Floats x = inputs(24), t = inputs(48, 0.5f);
    const Ints lengths = {4, 2};
    ASSERT_EQ(snn_set_inputs(fwd.get(), x.data(), x.size()), SNN_OK);
    ASSERT_EQ(snn_set_targets(bwd.get(), t.data(), t.size()), SNN_OK);
    ASSERT_EQ(snn_forward(fwd.get(), m.get()), SNN_OK);
    EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), SNN_LOSS_MSE, nullptr), SNN_OK);  // full length
    ASSERT_EQ(snn_set_lengths(fwd.get(), lengths.data(), lengths.size()), SNN_OK);
    ASSERT_EQ(snn_forward(fwd.get(), m.get()), SNN_OK);
    for (snn_loss loss : {SNN_LOSS_MSE, SNN_LOSS_HUBER, SNN_LOSS_SMOOTH_L1, SNN_LOSS_BCE_WITH_LOGITS}) {
        EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), loss, nullptr), SNN_ERR_UNSUPPORTED) << loss;
        EXPECT_NE(std::string(snn_last_error()).find("averages over every output value, padded steps included"),
                  std::string::npos)
            << snn_last_error();
    }
}

TEST(Labels, OnePerStepOfASequenceOutput) {
    Model seq = make_model(kPerStep);
    Backward b = make_backward(seq.get(), 2);
    const Ints seven(7, 1), eight = {0, 1, 2, 3, 4, 5, -1, 0};
    EXPECT_EQ(snn_set_labels(b.get(), seven.data(), seven.size()), SNN_ERR_COUNT);
    EXPECT_EQ(snn_set_labels(b.get(), eight.data(), eight.size()), SNN_OK) << snn_last_error();
    const Ints bad = {0, 1, 2, 3, 4, 6, 0, 0};
    EXPECT_EQ(snn_set_labels(b.get(), bad.data(), bad.size()), SNN_ERR_LABEL);
    EXPECT_NE(std::string(snn_last_error()).find("sample 1, step 1"), std::string::npos) << snn_last_error();
    const Ints minus_two = {0, 1, 2, 3, 4, -2, 0, 0};
    EXPECT_EQ(snn_set_labels(b.get(), minus_two.data(), minus_two.size()), SNN_ERR_LABEL);
    // 3 samples of 4 steps: rows gathered whole.
    const int64_t idx[2] = {2, 0};
    EXPECT_EQ(snn_set_labels_gather(b.get(), eight.data(), 2, idx, 2), SNN_ERR_INVALID_ARGUMENT);
    const Ints twelve = {0, 1, 2, 3, 4, 5, -1, 0, 5, 4, 3, 2};
    EXPECT_EQ(snn_set_labels_gather(b.get(), twelve.data(), 3, idx, 2), SNN_OK) << snn_last_error();

    // A vector output takes no -1.
    Model vec = make_model("input seq 4x3; flatten; dense 3");
    Backward bv = make_backward(vec.get(), 2);
    const Ints vl = {1, -1};
    EXPECT_EQ(snn_set_labels(bv.get(), vl.data(), vl.size()), SNN_ERR_LABEL);
}

// A token data set's own checks; gathering from it needs a token model
// (the embedding op), tested with the op.
TEST(TokenDataset, RefusesBadValues) {
    const Ints tokens = {1, 2, 3, 4, 5, 6};
    snn_dataset *ds = nullptr;
    const Ints neg = {1, 2, -3, 4, 5, 6};
    EXPECT_EQ(snn_dataset_create_tokens(SNN_DEVICE_CPU, neg.data(), 2, 3, nullptr, nullptr, 0, &ds), SNN_ERR_TOKEN);
    const Ints bad_lengths = {3, 4};
    EXPECT_EQ(snn_dataset_create_tokens(SNN_DEVICE_CPU, tokens.data(), 2, 3, bad_lengths.data(), nullptr, 0, &ds),
              SNN_ERR_INVALID_ARGUMENT);
    const Ints labels = {0, 1, 2, 3, 4, 5};
    EXPECT_EQ(snn_dataset_create_tokens(SNN_DEVICE_CPU, tokens.data(), 2, 3, nullptr, labels.data(), 2, &ds),
              SNN_ERR_INVALID_ARGUMENT);
    const Ints minus = {0, -1};
    EXPECT_EQ(snn_dataset_create_tokens(SNN_DEVICE_CPU, tokens.data(), 2, 3, nullptr, minus.data(), 1, &ds),
              SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_dataset_create_tokens(SNN_DEVICE_CPU, tokens.data(), 0, 3, nullptr, nullptr, 0, &ds),
              SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ds, nullptr);
    const Ints lengths = {3, 1}, step_labels = {0, 1, -1, 2, -1, -1};
    ASSERT_EQ(snn_dataset_create_tokens(SNN_DEVICE_CPU, tokens.data(), 2, 3, lengths.data(), step_labels.data(), 3,
                                        &ds),
              SNN_OK)
        << snn_last_error();
    // A float model refuses token data.
    Model m = make_model("input seq 3x1; dense 2");
    Forward fwd = make_forward(m.get(), 2);
    const int64_t idx[2] = {1, 0};
    EXPECT_EQ(snn_set_inputs_from_dataset(fwd.get(), ds, idx, 2), SNN_ERR_UNSUPPORTED);
    EXPECT_EQ(snn_set_tokens(fwd.get(), tokens.data(), tokens.size()), SNN_ERR_UNSUPPORTED);
    snn_dataset_destroy(ds);
}

// NULL labels make a data set without labels whatever labels_per_sample
// says (the bindings pass 1); asking it for labels is the error.
TEST(TokenDataset, NullLabelsMakeASetWithoutLabels) {
    const Ints tokens = {1, 2, 3, 4, 0, 1};
    snn_dataset *ds = nullptr;
    ASSERT_EQ(snn_dataset_create_tokens(SNN_DEVICE_CPU, tokens.data(), 2, 3, nullptr, nullptr, 3, &ds), SNN_OK)
        << snn_last_error();
    Model m = make_model("input tokens 3 vocab=5; embedding 2; dense 2");
    Backward bwd = make_backward(m.get(), 2);
    const int64_t idx[2] = {1, 0};
    EXPECT_EQ(snn_set_labels_from_dataset(bwd.get(), ds, idx, 2), SNN_ERR_STATE);
    EXPECT_NE(std::string(snn_last_error()).find("the data set was created without labels"), std::string::npos)
        << snn_last_error();
    snn_dataset_destroy(ds);
}

// Token ids: checked against the vocabulary before anything is copied;
// floats, input gradients and float data sets refused for a token model.
TEST(Tokens, IdsOutsideTheVocabularyAreRefused) {
    Model m = make_model("input tokens 3 vocab=5; embedding 2; flatten; dense 2");
    int64_t steps = 0, vocab = 0;
    ASSERT_EQ(snn_model_input_sequence(m.get(), &steps, &vocab), SNN_OK);
    EXPECT_EQ(steps, 3);
    EXPECT_EQ(vocab, 5);
    EXPECT_EQ(input_size(m.get()), 3u);
    EXPECT_EQ(describe(m.get()), "input tokens 3 vocab=5; embedding 2; flatten; dense 2");
    Forward fwd = make_forward(m.get(), 2);
    const Ints good = {0, 4, 2, 1, 3, 0};
    ASSERT_EQ(snn_set_tokens(fwd.get(), good.data(), good.size()), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_forward(fwd.get(), m.get()), SNN_OK);
    Floats before(4);
    ASSERT_EQ(snn_get_outputs(fwd.get(), before.data(), before.size()), SNN_OK);
    for (int32_t bad : {5, -1, 1 << 30}) {
        const Ints ids = {0, 4, 2, 1, bad, 0};
        EXPECT_EQ(snn_set_tokens(fwd.get(), ids.data(), ids.size()), SNN_ERR_TOKEN) << bad;
        EXPECT_NE(std::string(snn_last_error()).find("sample 1, step 1"), std::string::npos) << snn_last_error();
        const int64_t idx[2] = {1, 0};
        EXPECT_EQ(snn_set_tokens_gather(fwd.get(), ids.data(), 2, idx, 2), SNN_ERR_TOKEN);
    }
    EXPECT_EQ(snn_set_tokens(fwd.get(), good.data(), 5), SNN_ERR_COUNT);
    // Nothing was copied: the last pass's inputs still stand.
    ASSERT_EQ(snn_forward(fwd.get(), m.get()), SNN_OK);
    Floats after(4);
    ASSERT_EQ(snn_get_outputs(fwd.get(), after.data(), after.size()), SNN_OK);
    EXPECT_EQ(before, after);

    const Floats x(6, 1.0f);
    EXPECT_EQ(snn_set_inputs(fwd.get(), x.data(), x.size()), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(snn_last_error()).find("snn_set_tokens"), std::string::npos) << snn_last_error();
    Backward bwd = make_backward(m.get(), 2);
    EXPECT_EQ(snn_set_input_gradient(bwd.get(), 1), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(snn_last_error()).find("token ids, which have no gradient"), std::string::npos)
        << snn_last_error();
    EXPECT_EQ(snn_set_input_gradient(bwd.get(), 0), SNN_OK);
    snn_dataset *floats = nullptr;
    ASSERT_EQ(snn_dataset_create(SNN_DEVICE_CPU, x.data(), 2, 3, nullptr, &floats), SNN_OK);
    const int64_t idx[2] = {0, 1};
    EXPECT_EQ(snn_set_inputs_from_dataset(fwd.get(), floats, idx, 2), SNN_ERR_UNSUPPORTED);
    snn_dataset_destroy(floats);
}

// Gathering tokens, lengths and labels from a token data set equals setting
// the same rows from the host; ids beyond the model's vocabulary refused.
TEST(Tokens, DatasetEqualsHostRows) {
    Model m = make_model("input tokens 4 vocab=6; embedding 3; dense 6");
    const Ints ids = {1, 2, 3, 4, 5, 0, 1, 2, 3, 3, 3, 3};
    const Ints lengths = {4, 2, 1}, labels = {0, 1, 2, 3, 4, -1, 0, 1, 5, 5, 5, 5};
    snn_dataset *ds = nullptr;
    ASSERT_EQ(snn_dataset_create_tokens(SNN_DEVICE_CPU, ids.data(), 3, 4, lengths.data(), labels.data(), 4, &ds),
              SNN_OK);
    const int64_t idx[2] = {2, 1};
    float loss[2] = {0, 0};
    for (int way = 0; way < 2; ++way) {
        Forward f = make_forward(m.get(), 2);
        Backward b = make_backward(m.get(), 2);
        if (way == 0) {
            ASSERT_EQ(snn_set_inputs_from_dataset(f.get(), ds, idx, 2), SNN_OK) << snn_last_error();
            ASSERT_EQ(snn_set_labels_from_dataset(b.get(), ds, idx, 2), SNN_OK) << snn_last_error();
        } else {
            ASSERT_EQ(snn_set_tokens_gather(f.get(), ids.data(), 3, idx, 2), SNN_OK);
            ASSERT_EQ(snn_set_lengths_gather(f.get(), lengths.data(), 3, idx, 2), SNN_OK);
            ASSERT_EQ(snn_set_labels_gather(b.get(), labels.data(), 3, idx, 2), SNN_OK);
        }
        ASSERT_EQ(snn_forward(f.get(), m.get()), SNN_OK);
        ASSERT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &loss[way]), SNN_OK);
    }
    EXPECT_EQ(loss[0], loss[1]);
    Model small = make_model("input tokens 4 vocab=5; embedding 3; dense 5");
    Forward f = make_forward(small.get(), 2);
    EXPECT_EQ(snn_set_inputs_from_dataset(f.get(), ds, idx, 2), SNN_ERR_TOKEN);
    Model per_sample = make_model("input tokens 4 vocab=6; embedding 3; seqpool mean; dense 6");
    Backward b = make_backward(per_sample.get(), 2);
    EXPECT_EQ(snn_set_labels_from_dataset(b.get(), ds, idx, 2), SNN_ERR_COUNT);
    snn_dataset_destroy(ds);
}

// A model whose sequence layers change the number of steps takes no lengths.
TEST(Lengths, RefusedWhenTheStepsChange) {
    Model m = make_model("input seq 8x2; conv1d 3 4 stride=2; seqpool mean; dense 2");
    Forward f = make_forward(m.get(), 1);
    const Floats x(16, 0.5f);
    ASSERT_EQ(snn_set_inputs(f.get(), x.data(), x.size()), SNN_OK);
    const Ints l = {5};
    EXPECT_EQ(snn_set_lengths(f.get(), l.data(), l.size()), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(snn_last_error()).find("keep the input's steps"), std::string::npos) << snn_last_error();
}

}  // namespace
