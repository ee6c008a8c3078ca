// The textual model spec: canonical round trip, precise errors, layer shapes
// and the layout of the flat parameter vector.
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"

using namespace snn_test;

namespace {

// snn_model_create's status for a spec, and its message.
snn_status create_status(const char *spec, std::string *message) {
    snn_model *m = nullptr;
    const snn_status status = snn_model_create(spec, &m);
    *message = snn_last_error();
    snn_model_destroy(m);
    return status;
}

TEST(Spec, DescribeParsesBackToTheSameDescription) {
    const char *specs[] = {
        "input 100; dense 200 relu; dense 1",
        "input 4; dense 32 tanh; dense 16 sigmoid; dense 4 leaky_relu; dense 3",
        "input 10; dense 8 relu nobias; dense 5 identity",
        "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10",
        "input 12x12x2; conv 3x3 4 relu pad=1; maxpool 2; conv 3x3 6 tanh stride=2; avgpool 2; flatten; dense 5",
        "input 6x5x2; conv 3x2 3 tanh stride=2x1 pad=1x0",
        "input 7x7x1; maxpool 3; flatten; dense 2",
        "input 5x6x2; avgpool 2x3 stride=1; flatten; dense 2 sigmoid",
        "input 8x8x3; conv 1 4 nobias init=he_normal; flatten; dense 3 init=zeros",
        "input 3\ndense 4 init=lecun_normal\ndense 2 init=glorot_normal",
        "  input   16 ;dense 8   leaky_relu init=he_uniform;;dense 2  ",
        "input 9x9x1; conv 3 2 stride=3 pad=0; flatten; dense 1",
        "input 8x8x3; conv 3 4 pad=1 nobias name=a; batchnorm; relu; conv 3 4 pad=1 nobias; batchnorm eps=0.001 "
        "momentum=0.2; add a; relu; globalavgpool; flatten; dropout 0.25; dense 3",
        "input 6; dense 8 gelu name=h; layernorm eps=1e-06; dense 8 silu; concat h; softmax; dense 2",
        "input 5 name=x; sigmoid; add x; leaky_relu name=y; concat x; relu; dense 1",
        "input 4x4x2; conv 1 3 name=b; gelu; concat b; silu; maxpool 2; flatten; batchnorm; tanh; dense 2",
        "input tokens 7 vocab=11; embedding 6 pad=0; posembed; conv1d 3 5 relu pad=1; seqpool max",
        "input seq 9x4; conv1d 2 3 stride=2 dilation=3 nobias init=he_normal; seqpool mean; dense 2",
        "input seq 5x3; posembed name=p; conv1d 1 3 tanh; add p; seqpool last",
        "input 8x8x3; conv 3x3 8 relu pad=1 name=a; conv 3x3 16 relu stride=2 pad=1; conv 3x3 16 pad=1 name=main; "
        "conv 1x1 16 stride=2 from=a; add main; relu",
        "input 6 name=x; dense 5 tanh name=a; dense 4 relu from=x; concat a; dense 3",
        "input 4x4x2; conv 3 3 pad=1 tanh name=c; flatten name=f; conv 1 2 from=c; flatten; concat f; dense 3",
        "input 4 name=x; dense 4 name=a; dense 4 from=x name=b; add a from=b name=s; concat x from=a; dense 4; add s; "
        "dense 2",
        "input tokens 5 vocab=9 name=t; embedding 4 name=e; embedding 4 from=t; add e; seqpool mean",
    };
    for (const char *spec : specs) {
        Model a = make_model(spec);
        ASSERT_TRUE(a) << spec;
        const std::string described = describe(a.get());
        Model b = make_model(described);
        ASSERT_TRUE(b) << described;
        EXPECT_EQ(describe(b.get()), described) << spec;
        EXPECT_EQ(param_count(b.get()), param_count(a.get())) << spec;
    }
}

// Random graphs of vectors: each layer reads a random earlier layer (from=
// where it is not the previous one, sometimes written out though it is), is
// dense, an activation, add (of an earlier layer of the same width) or
// concat; the layers nobody read are joined by concats at the end. The
// canonical text parses back to itself (so to the same inputs of every
// layer) with the same shapes and parameter layout.
TEST(Spec, RandomGraphsWithFromRoundTrip) {
    std::mt19937 rng(3);
    size_t total_branches = 0;
    for (int round = 0; round < 200; ++round) {
        size_t branches = 0;
        std::vector<int64_t> width{int64_t(1 + rng() % 5)};
        std::vector<char> read{0};
        std::string spec = "input " + std::to_string(width[0]) + " name=n0";
        const int layers = 1 + int(rng() % 8);
        for (int i = 1; i <= layers; ++i) {
            const size_t from = rng() % 2 ? size_t(i - 1) : rng() % size_t(i);
            read[from] = 1;
            int64_t w = width[from];
            std::string t;
            const unsigned op = rng() % 4;
            std::vector<size_t> same;
            for (size_t k = 0; k < width.size(); ++k)
                if (width[k] == w) same.push_back(k);
            if (op == 0) {
                w = 1 + rng() % 6;
                t = "dense " + std::to_string(w);
            } else if (op == 1) {
                t = "tanh";
            } else {
                const size_t other = op == 2 ? same[rng() % same.size()] : rng() % width.size();
                read[other] = 1;
                t = (op == 2 ? "add n" : "concat n") + std::to_string(other);
                if (op == 3) w += width[other];
            }
            if (from + 1 != size_t(i)) ++branches;
            if (from + 1 != size_t(i) || rng() % 4 == 0) t += " from=n" + std::to_string(from);
            spec += "; " + t + " name=n" + std::to_string(i);
            width.push_back(w);
            read.push_back(0);
        }
        for (size_t k = 0; k + 1 < read.size(); ++k)
            if (!read[k]) spec += "; concat n" + std::to_string(k);
        Model a = make_model(spec);
        ASSERT_TRUE(a) << spec;
        const std::string text = describe(a.get());
        Model b = make_model(text);
        ASSERT_TRUE(b) << text;
        EXPECT_EQ(describe(b.get()), text) << spec;
        int64_t count = 0, count_b = 0;
        ASSERT_EQ(snn_model_layer_count(a.get(), &count), SNN_OK);
        ASSERT_EQ(snn_model_layer_count(b.get(), &count_b), SNN_OK);
        ASSERT_EQ(count, count_b) << spec;
        for (int64_t l = 0; l < count; ++l) {
            int64_t sa[3], sb[3];
            size_t pa[4], pb[4];
            ASSERT_EQ(snn_model_layer_shape(a.get(), l, &sa[0], &sa[1], &sa[2]), SNN_OK);
            ASSERT_EQ(snn_model_layer_shape(b.get(), l, &sb[0], &sb[1], &sb[2]), SNN_OK);
            ASSERT_EQ(snn_model_layer_params(a.get(), l, &pa[0], &pa[1], &pa[2], &pa[3]), SNN_OK);
            ASSERT_EQ(snn_model_layer_params(b.get(), l, &pb[0], &pb[1], &pb[2], &pb[3]), SNN_OK);
            for (int k = 0; k < 3; ++k) EXPECT_EQ(sa[k], sb[k]) << spec << " layer " << l;
            for (int k = 0; k < 4; ++k) EXPECT_EQ(pa[k], pb[k]) << spec << " layer " << l;
        }
        // from= is printed for exactly the layers that read an earlier layer
        // than the previous one.
        size_t printed = 0;
        for (size_t at = text.find(" from="); at != std::string::npos; at = text.find(" from=", at + 1)) ++printed;
        EXPECT_EQ(printed, branches) << spec << " -> " << text;
        total_branches += branches;
    }
    EXPECT_GT(total_branches, 200u);
}

TEST(Spec, CanonicalFormDropsDefaultsAndNormalisesSpacing) {
    Model m = make_model("input 6x6x1 ;conv 3x3 4 identity stride=1 pad=0x0;maxpool 2x2 stride=2; flatten\n dense 3 init=glorot_uniform");
    EXPECT_EQ(describe(m.get()), "input 6x6x1; conv 3 4; maxpool 2; flatten; dense 3");
}

TEST(Spec, GraphLayersHaveTheirCanonicalForm) {
    Model m = make_model("input 4x4x2 name=in; conv 3 2 pad=1 name=c;batchnorm momentum=0.1 eps=1e-5;add  c;"
                         "concat in; dropout 0.5; globalavgpool; flatten; layernorm eps=0.01; dense 3 silu");
    EXPECT_EQ(describe(m.get()),
              "input 4x4x2 name=in; conv 3 2 pad=1 name=c; batchnorm; add c; concat in; dropout 0.5; globalavgpool; "
              "flatten; layernorm eps=0.01; dense 3 silu");
}

// from=ID makes inputs[0] the named layer: printed only when it is not the
// previous one (from= naming the previous layer is the default, dropped),
// after the op's own text and before name=.
TEST(Spec, FromIsPrintedOnlyWhenTheLayerReadIsNotThePreviousOne) {
    Model m = make_model("input 4 name=x; dense 3 name=a from=x; dense 3 from=x; add a name=s; tanh from=a name=t; "
                         "add t; add s");
    EXPECT_EQ(describe(m.get()),
              "input 4 name=x; dense 3 name=a; dense 3 from=x; add a name=s; tanh from=a name=t; add t; add s");
}

// The downsampling block: the shortcut's 1x1 convolution of stride 2 reads
// the stem (8x8x8) and gives the main branch's 4x4x16; its weights follow
// the main branch's in the flat vector, in spec order.
TEST(Spec, FromBranchShapesAndParameterLayout) {
    Model m = make_model("input 8x8x3; conv 3x3 8 relu pad=1 name=a; conv 3x3 16 relu stride=2 pad=1; "
                         "conv 3x3 16 pad=1 name=main; conv 1x1 16 stride=2 from=a; add main; relu");
    const int64_t expect[][3] = {{3, 8, 8}, {8, 8, 8}, {16, 4, 4}, {16, 4, 4}, {16, 4, 4}, {16, 4, 4}, {16, 4, 4}};
    for (int64_t l = 0; l < 7; ++l) {
        int64_t c = 0, h = 0, w = 0;
        ASSERT_EQ(snn_model_layer_shape(m.get(), l, &c, &h, &w), SNN_OK);
        EXPECT_EQ(c, expect[l][0]) << "layer " << l;
        EXPECT_EQ(h, expect[l][1]) << "layer " << l;
        EXPECT_EQ(w, expect[l][2]) << "layer " << l;
    }
    size_t wo = 0, wc = 0, bo = 0, bc = 0;
    ASSERT_EQ(snn_model_layer_params(m.get(), 4, &wo, &wc, &bo, &bc), SNN_OK);
    const size_t before = (8 * 3 * 9 + 8) + (16 * 8 * 9 + 16) + (16 * 16 * 9 + 16);
    EXPECT_EQ(wo, before);
    EXPECT_EQ(wc, size_t(16 * 8));  // [16][8][1][1]: the stem's 8 channels in
    EXPECT_EQ(bc, 16u);
    EXPECT_EQ(param_count(m.get()), before + 16 * 8 + 16);
    EXPECT_EQ(output_size(m.get()), size_t(16 * 4 * 4));
}

TEST(Spec, GraphShapesAndParameterLayout) {
    Model m = make_model("input 6x6x3 name=in; conv 3 4 pad=1 name=a; batchnorm; concat in; globalavgpool; flatten; "
                         "layernorm; dense 2");
    int64_t c = 0, h = 0, w = 0;
    ASSERT_EQ(snn_model_layer_shape(m.get(), 3, &c, &h, &w), SNN_OK);
    EXPECT_EQ(c, 7);  // 4 channels joined with the 3 of the input
    EXPECT_EQ(h, 6);
    ASSERT_EQ(snn_model_layer_shape(m.get(), 4, &c, &h, &w), SNN_OK);
    EXPECT_EQ(c * h * w, 7);
    size_t wo = 0, wc = 0, bo = 0, bc = 0;
    ASSERT_EQ(snn_model_layer_params(m.get(), 2, &wo, &wc, &bo, &bc), SNN_OK);
    EXPECT_EQ(wo, size_t(4 * 3 * 9 + 4));  // after the conv's weight and bias
    EXPECT_EQ(wc, 4u);
    EXPECT_EQ(bo, wo + 4);
    EXPECT_EQ(bc, 4u);
    ASSERT_EQ(snn_model_layer_params(m.get(), 6, &wo, &wc, &bo, &bc), SNN_OK);
    EXPECT_EQ(wc, 7u);  // layernorm over the 7 features
    EXPECT_EQ(param_count(m.get()), size_t(4 * 27 + 4 + 8 + 14 + 7 * 2 + 2));
    size_t state = 0, offset = 0, count = 0;
    ASSERT_EQ(snn_state_count(m.get(), &state), SNN_OK);
    EXPECT_EQ(state, 9u);
    ASSERT_EQ(snn_model_layer_state(m.get(), 2, &offset, &count), SNN_OK);
    EXPECT_EQ(offset, 0u);
    EXPECT_EQ(count, 9u);
    ASSERT_EQ(snn_model_layer_state(m.get(), 1, &offset, &count), SNN_OK);
    EXPECT_EQ(count, 0u);
    std::vector<float> s(state);
    ASSERT_EQ(snn_get_state(m.get(), s.data(), s.size()), SNN_OK);
    EXPECT_EQ(s, (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1, 0}));
}

TEST(SpecErrors, GraphMistakesNameTheLayersAndTheReason) {
    struct Case {
        const char *spec;
        snn_status status;
        const char *message;
    } cases[] = {
        {"input 4x4x2; conv 3 2 name=a; conv 1 3; add a", SNN_ERR_SHAPE,
         "layer 3 (add a): the shapes differ: 2x2x3 (layer 2, the previous one) and 2x2x2 (layer 1, 'a')"},
        {"input 4x4x2 name=a; conv 3 2; add a", SNN_ERR_SHAPE,
         "the shapes differ: 2x2x2 (layer 1, the previous one) and 4x4x2 (layer 0, 'a')"},
        {"input 4; dense 4; add nowhere", SNN_ERR_SPEC, "spec position 23 ('nowhere'): no earlier layer has this name"},
        {"input 4; add b; dense 4 name=b", SNN_ERR_SPEC, "('b'): no earlier layer has this name"},
        {"input 4 name=a; dense 4 name=a", SNN_ERR_SPEC, "('name=a'): an earlier layer has this name"},
        {"input 4; dense 4 name=1x", SNN_ERR_SPEC, "a name must be a letter or '_'"},
        {"input 4; dense 4 name=a name=b", SNN_ERR_SPEC,
         "spec position 25 ('name=b'): name= is given twice in one layer (first at position 18: 'name=a')"},
        {"input 4x4x1 name=a; flatten; concat a", SNN_ERR_SHAPE, "cannot join 16 (layer 1, the previous one) and 4x4x1"},
        {"input 4; dropout 1", SNN_ERR_SPEC, "dropout needs a probability P = 0 or in [5.96046448e-08, 0.99999994]"},
        {"input 4; dropout", SNN_ERR_SPEC, "dropout needs a probability"},
        {"input 4; dropout 0.5x", SNN_ERR_SPEC, "dropout needs a probability"},
        {"input 4; batchnorm eps=0", SNN_ERR_SPEC, "eps must be a number in [1.17549435e-38, 1], a normal float32"},
        {"input 4; batchnorm momentum=1.5", SNN_ERR_SPEC, "momentum must be a number with 0 <= momentum <= 1"},
        {"input 4; batchnorm affine", SNN_ERR_SPEC, "unknown option 'affine' for batchnorm"},
        {"input 4; globalavgpool", SNN_ERR_SHAPE, "globalavgpool needs an image input"},
        {"input 4; relu 3", SNN_ERR_SPEC, "unknown option '3' for relu"},
        {"input 4; add", SNN_ERR_SPEC, "add takes the name of an earlier layer"},
        {"input 4; swish", SNN_ERR_SPEC, "unknown layer (expected input, dense, conv, maxpool, avgpool, flatten, add, "
                                         "concat, relu, leaky_relu, tanh, sigmoid, gelu, silu, softmax, batchnorm, "
                                         "layernorm, dropout, globalavgpool, embedding, posembed, seqpool, "
                                         "conv1d, attention, lstm, gru)"},
        {"input seq 4x3; lstm 0", SNN_ERR_SPEC, "spec position 21 ('0'): lstm needs a positive hidden size"},
        {"input seq 4x3; gru", SNN_ERR_SPEC, "spec position 16 ('gru'): gru needs a positive hidden size"},
        {"input seq 4x3; lstm 4 reverse", SNN_ERR_SPEC,
         "spec position 23: unknown option 'reverse' for lstm (expected bidirectional, last, nobias, name=... or from=...)"},
        {"input seq 4x3; gru 4 relu", SNN_ERR_SPEC, "unknown option 'relu' for gru"},
        {"input 4; lstm 4", SNN_ERR_SHAPE, "layer 1 (lstm 4): input 4 is not a sequence; lstm takes sequences"},
        {"input seq 4x3; lstm 4 last; gru 2", SNN_ERR_SHAPE, "layer 2 (gru 2): input 4 is not a sequence"},
        {"input 1024x1024x1536 name=a; concat a", SNN_ERR_SHAPE, "more than 2^31 elements per sample"},
        // from=ID: an earlier layer's name, once, not on the input; every
        // layer but the last read by a later one; shape errors name the
        // layer from= reads.
        {"input 4; dense 4; dense 2 from=nowhere", SNN_ERR_SPEC,
         "spec position 32 ('nowhere'): no earlier layer has this name"},
        {"input 4; dense 4 from=b name=b", SNN_ERR_SPEC, "('b'): no earlier layer has this name"},
        {"input 4; dense 4 name=a; dense 4 from=a; dense 2 from=b name=b", SNN_ERR_SPEC,
         "('b'): no earlier layer has this name"},
        {"input 4 name=x; dense 4 from=x from=x", SNN_ERR_SPEC,
         "spec position 32 ('from=x'): from= is given twice in one layer (first at position 25: 'from=x')"},
        {"input 4 from=x", SNN_ERR_SPEC,
         "spec position 9 ('from=x'): the input reads no layer: from=ID is for the layers after it"},
        {"input 4 name=x; dense 4 from=", SNN_ERR_SPEC, "spec position 30 (''): no earlier layer has this name"},
        {"input 4 name=x; dense 3 tanh; dense 2 from=x", SNN_ERR_SPEC,
         "spec position 17: layer 1 (dense 3) is read by no later layer (only the last layer, the output, may be "
         "left unread"},
        {"input 4 name=x; dense 3 name=a; dense 3 from=x; dense 3 from=a name=b; add b", SNN_ERR_SPEC,
         "spec position 33: layer 2 (dense 3 from=x) is read by no later layer"},
        {"input 4x4x2 name=x; conv 3 2 name=a; conv 1 2 from=x; add a", SNN_ERR_SHAPE,
         "layer 3 (add a): the shapes differ: 4x4x2 (layer 2, the previous one) and 2x2x2 (layer 1, 'a')"},
        {"input 4x4x2 name=x; conv 3 2 name=a; conv 1 2 from=x name=b; add b from=a", SNN_ERR_SHAPE,
         "layer 3 (add b from=a): the shapes differ: 2x2x2 (layer 1, 'a') and 4x4x2 (layer 2, 'b')"},
        {"input 4x4x1 name=x; flatten name=f; relu from=x name=r; concat r from=f", SNN_ERR_SHAPE,
         "layer 3 (concat r from=f): cannot join 16 (layer 1, 'f') and 4x4x1 (layer 2, 'r')"},
        {"input 4x4x1 name=x; flatten name=f; conv 1 2 from=x name=c; conv 1 2 from=f; add c", SNN_ERR_SHAPE,
         "layer 3 (conv 1x1 2 from=f): input is a vector of 16; conv needs an image input"},
        {"input tokens 4 vocab=5 name=t; embedding 3 name=e; dense 3 from=t; add e", SNN_ERR_SHAPE,
         "layer 2 (dense 3 from=t): input tokens 4 is token ids"},
    };
    for (const Case &c : cases) {
        std::string msg;
        EXPECT_EQ(create_status(c.spec, &msg), c.status) << c.spec << ": " << msg;
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.spec << ": " << msg;
    }
}

// Each option of each op given twice in one layer: refused at the second,
// naming the first (each alone is accepted). The last one used to win.
TEST(SpecErrors, EveryOptionGivenTwiceInOneLayerIsRefused) {
    struct Case {
        const char *before;  // the layers before, ending with "; "
        const char *layer;   // the layer's keyword and sizes
        const char *first, *second;
        const char *key;     // as the message names it
    } cases[] = {
        {"", "input 4", "name=a", "name=b", "name="},
        {"input 4; ", "dense 4", "relu", "tanh", "an activation"},
        {"input 4; ", "dense 4", "gelu", "gelu", "an activation"},
        {"input 4; ", "dense 4", "nobias", "nobias", "nobias"},
        {"input 4; ", "dense 4", "init=zeros", "init=he_normal", "init="},
        {"input 4; ", "dense 4", "name=a", "name=b", "name="},
        {"input 4x4x2; ", "conv 1 2", "relu", "leaky_relu", "an activation"},
        {"input 4x4x2; ", "conv 1 2", "stride=2", "stride=1", "stride="},
        {"input 4x4x2; ", "conv 1 2", "pad=1", "pad=2x1", "pad="},
        {"input 4x4x2; ", "conv 1 2", "nobias", "nobias", "nobias"},
        {"input 4x4x2; ", "conv 1 2", "init=zeros", "init=zeros", "init="},
        {"input 4x4x2; ", "conv 1 2", "name=a", "name=a", "name="},
        {"input 4x4x2; ", "maxpool 2", "stride=2", "stride=1", "stride="},
        {"input 4x4x2; ", "maxpool 2", "name=a", "name=b", "name="},
        {"input 4x4x2; ", "avgpool 2", "stride=1", "stride=1", "stride="},
        {"input 4x4x2; ", "avgpool 2", "name=a", "name=b", "name="},
        {"input 4x4x2; ", "globalavgpool", "name=a", "name=b", "name="},
        {"input 4x4x2; ", "flatten", "name=a", "name=b", "name="},
        {"input 4 name=z; ", "add z", "name=a", "name=b", "name="},
        {"input 4 name=z; ", "concat z", "name=a", "name=b", "name="},
        {"input 4; ", "relu", "name=a", "name=b", "name="},
        {"input 4; ", "leaky_relu", "name=a", "name=b", "name="},
        {"input 4; ", "tanh", "name=a", "name=b", "name="},
        {"input 4; ", "sigmoid", "name=a", "name=b", "name="},
        {"input 4; ", "gelu", "name=a", "name=b", "name="},
        {"input 4; ", "silu", "name=a", "name=b", "name="},
        {"input 4; ", "softmax", "name=a", "name=b", "name="},
        {"input 4; ", "batchnorm", "eps=0.1", "eps=0.2", "eps="},
        {"input 4; ", "batchnorm", "momentum=0.1", "momentum=0.2", "momentum="},
        {"input 4; ", "batchnorm", "name=a", "name=b", "name="},
        {"input 4; ", "layernorm", "eps=0.1", "eps=0.1", "eps="},
        {"input 4; ", "layernorm", "name=a", "name=b", "name="},
        {"input 4; ", "dropout 0.5", "name=a", "name=b", "name="},
        {"input tokens 4 vocab=5; ", "embedding 3", "pad=0", "pad=4", "pad="},
        {"input seq 9x2; ", "conv1d 3 2", "stride=2", "stride=1", "stride="},
        {"input seq 9x2; ", "conv1d 3 2", "pad=1", "pad=0", "pad="},
        {"input seq 9x2; ", "conv1d 3 2", "dilation=2", "dilation=3", "dilation="},
        {"input seq 9x2; ", "conv1d 3 2", "gelu", "relu", "an activation"},
        {"input seq 9x2; ", "posembed", "name=a", "name=b", "name="},
        {"input seq 9x2; ", "seqpool max", "name=a", "name=b", "name="},
        {"input seq 4x3; ", "lstm 4", "bidirectional", "bidirectional", "bidirectional"},
        {"input seq 4x3; ", "lstm 4", "last", "last", "last"},
        {"input seq 4x3; ", "lstm 4", "nobias", "nobias", "nobias"},
        {"input seq 4x3; ", "lstm 4", "name=a", "name=b", "name="},
        {"input seq 4x3; ", "gru 4", "bidirectional", "bidirectional", "bidirectional"},
        {"input seq 4x3; ", "gru 4", "last", "last", "last"},
        {"input seq 4x3; ", "gru 4", "nobias", "nobias", "nobias"},
        {"input seq 4x3; ", "gru 4", "name=a", "name=b", "name="},
    };
    for (const Case &c : cases) {
        const std::string after = std::string(c.before).empty() ? "; dense 1" : "";
        const std::string head = std::string(c.before) + c.layer + " ";
        std::string msg;
        for (const char *alone : {c.first, c.second})
            EXPECT_EQ(create_status((head + alone + after).c_str(), &msg), SNN_OK) << head << alone << ": " << msg;
        // The second one a word later, so both positions are distinct.
        const std::string spec = head + c.first + " " + c.second + after;
        const size_t first = head.size() + 1, second = first + std::strlen(c.first) + 1;
        EXPECT_EQ(create_status(spec.c_str(), &msg), SNN_ERR_SPEC) << spec;
        const std::string expected = "spec position " + std::to_string(second) + " ('" + c.second + "'): " + c.key +
                                     " is given twice in one layer (first at position " + std::to_string(first) +
                                     ": '" + c.first + "')";
        EXPECT_NE(msg.find(expected), std::string::npos) << spec << "\n" << msg << "\nexpected " << expected;
    }
    // Not adjacent, and with other options between: still refused.
    std::string msg;
    EXPECT_EQ(create_status("input 4x4x1; conv 3 2 stride=2 pad=1 relu nobias stride=1", &msg), SNN_ERR_SPEC);
    EXPECT_NE(msg.find("spec position 50 ('stride=1'): stride= is given twice in one layer (first at position 23"),
              std::string::npos)
        << msg;
}

// Sizes, probabilities and names given twice are words an op does not take:
// refused too, by the op.
TEST(SpecErrors, PositionalArgumentsGivenTwiceAreRefused) {
    const std::pair<const char *, const char *> cases[] = {
        {"input 4 4; dense 1", "input takes one size"},
        {"input 4; dense 4 4", "spec position 18: unknown option '4' for dense"},
        {"input 4x4x1; conv 1 2 2", "unknown option '2' for conv"},
        {"input 4x4x1; maxpool 2 2", "unknown option '2' for maxpool"},
        {"input 4x4x1; avgpool 2 1", "unknown option '1' for avgpool"},
        {"input 4; dropout 0.1 0.2", "unknown option '0.2' for dropout"},
        {"input 4 name=a; add a a", "add takes the name of an earlier layer"},
        {"input 4 name=a; concat a a", "concat takes the name of an earlier layer"},
        {"input seq 4x3; lstm 4 4", "spec position 23: unknown option '4' for lstm"},
        {"input seq 4x3; gru 4 2", "spec position 22: unknown option '2' for gru"},
    };
    for (const auto &[spec, message] : cases) {
        std::string msg;
        EXPECT_EQ(create_status(spec, &msg), SNN_ERR_SPEC) << spec;
        EXPECT_NE(msg.find(message), std::string::npos) << spec << ": " << msg;
    }
}

// eps is a normal float32 in (0, 1]: 1e-300 used to be accepted and act as 0
// in float32, so a constant input gave 0 * inf = NaN.
TEST(SpecErrors, EpsIsANormalFloat32UpToOne) {
    for (const char *op : {"batchnorm", "layernorm"}) {
        for (const char *bad : {"0", "1e-300", "1e-39", "1.17e-38", "-1e-5", "1.0000001", "2", "1e999", "nan", "inf"}) {
            const std::string spec = std::string("input 4; ") + op + " eps=" + bad;
            std::string msg;
            EXPECT_EQ(create_status(spec.c_str(), &msg), SNN_ERR_SPEC) << spec;
            EXPECT_NE(msg.find(std::string("spec position ") + std::to_string(11 + std::strlen(op)) + " ('eps=" +
                               bad + "'): eps must be a number in [1.17549435e-38, 1]"),
                      std::string::npos)
                << spec << ": " << msg;
        }
        for (const char *good : {"1.17549435e-38", "1e-30", "1"}) {
            const std::string spec = std::string("input 4; ") + op + " eps=" + good;
            Model m = make_model(spec);
            EXPECT_EQ(describe(m.get()), spec);
        }
    }
}

// The smallest eps keeps a constant input finite: (x - mean) = 0 times
// 1/sqrt(0 + eps) = 9.2e18 gives 0, the bias.
TEST(Spec, SmallestEpsNormalisesAConstantInputToTheBias) {
    Model ln = make_model("input 4; layernorm eps=1.17549435e-38");
    Forward f = make_forward(ln.get(), 1);
    EXPECT_EQ(run(f.get(), ln.get(), {3, 3, 3, 3}), (std::vector<float>{0, 0, 0, 0}));
    Model bn = make_model("input 2; batchnorm eps=1.17549435e-38");
    Forward g = make_forward(bn.get(), 2);
    EXPECT_EQ(run(g.get(), bn.get(), {5, -1, 5, -1}), (std::vector<float>{0, 0, 0, 0}));
}

// The mask compares 24-bit uniform numbers with P: 0 and [2^-24, 1 - 2^-24]
// are the probabilities it draws.
TEST(SpecErrors, DropoutProbabilityIsOneTheMaskCanDraw) {
    for (const char *bad : {"1e-300", "1e-8", "5.9e-08", "0.99999995", "1", "-0.1", "1e999"}) {
        const std::string spec = std::string("input 4; dropout ") + bad;
        std::string msg;
        EXPECT_EQ(create_status(spec.c_str(), &msg), SNN_ERR_SPEC) << spec;
        EXPECT_NE(msg.find(std::string("spec position 18 ('") + bad +
                           "'): dropout needs a probability P = 0 or in [5.96046448e-08, 0.99999994]"),
                  std::string::npos)
            << spec << ": " << msg;
    }
    for (const char *good : {"0", "5.96046448e-08", "0.5", "0.99999994"}) {
        const std::string spec = std::string("input 4; dropout ") + good;
        Model m = make_model(spec);
        EXPECT_EQ(describe(m.get()), spec);
    }
}

// A spec of more than SNN_MAX_LAYERS layers after the input, more than
// SNN_MAX_SPEC_LENGTH characters, or a layer of more than 16 words.
TEST(SpecErrors, SpecsBeyondTheLimitsAreRefused) {
    std::string spec = "input 1";
    for (int i = 0; i < SNN_MAX_LAYERS; ++i) spec += ";relu";
    Model largest = make_model(spec);
    const size_t over = spec.size() + 2;
    spec += ";relu";
    std::string msg;
    EXPECT_EQ(create_status(spec.c_str(), &msg), SNN_ERR_SPEC);
    EXPECT_NE(msg.find("spec position " + std::to_string(over) + " ('relu'): a model has at most 100000 layers "
                       "after its input (SNN_MAX_LAYERS)"),
              std::string::npos)
        << msg;
    std::string longest = "input 1; relu";
    longest.resize(SNN_MAX_SPEC_LENGTH, ' ');
    Model padded = make_model(longest);
    longest += ' ';
    EXPECT_EQ(create_status(longest.c_str(), &msg), SNN_ERR_SPEC);
    EXPECT_NE(msg.find("spec has 4194305 characters, more than SNN_MAX_SPEC_LENGTH (4194304)"), std::string::npos)
        << msg;
    EXPECT_EQ(create_status("input 4; dense 4 a b c d e f g h i j k l m n o", &msg), SNN_ERR_SPEC);
    EXPECT_NE(msg.find("spec position 46 ('o'): a layer has at most 16 words"), std::string::npos) << msg;
}

// A model file carries its spec: one that snn_model_create refuses is
// refused on load with the same message.
TEST(SpecErrors, AFileWhoseSpecIsRefusedIsRefusedWithTheSameMessage) {
    for (const char *spec : {"input 2; layernorm eps=1e-300", "input 2; batchnorm eps=0.1 eps=0.2",
                             "input 2; dense 2 relu tanh", "input 2; dropout 1e-9",
                             "input 2x2x1; conv 1 1 stride=2 stride=1"}) {
        std::string created;
        ASSERT_EQ(create_status(spec, &created), SNN_ERR_SPEC) << spec;
        const std::string reason = created.substr(created.find(": ") + 2);  // after "snn_model_create: "
        std::string json = std::string(R"({"__metadata__":{"format":"snn","format_version":"1","spec":")") + spec +
                           "\"}}";
        std::vector<unsigned char> file(8, 0);
        for (int i = 0; i < 8; ++i) file[size_t(i)] = (unsigned char)((json.size() >> (8 * i)) & 0xff);
        file.insert(file.end(), json.begin(), json.end());
        snn_model *m = nullptr;
        EXPECT_EQ(snn_model_load_from_buffer(file.data(), file.size(), &m), SNN_ERR_SPEC) << spec;
        EXPECT_EQ(m, nullptr);
        const std::string loaded = snn_last_error();
        EXPECT_NE(loaded.find("the file's spec: " + reason), std::string::npos) << loaded << "\nexpected " << reason;
    }
}

TEST(Spec, DescribeReportsTheLengthAndRefusesASmallBuffer) {
    Model m = make_model("input 4; dense 2");
    size_t length = 0;
    ASSERT_EQ(snn_model_describe(m.get(), nullptr, 0, &length), SNN_OK);
    EXPECT_EQ(length, std::string("input 4; dense 2").size());
    char small[8] = "xxxxxxx";
    EXPECT_EQ(snn_model_describe(m.get(), small, sizeof small, &length), SNN_ERR_COUNT);
    EXPECT_EQ(std::string(small), "xxxxxxx");  // nothing written
}

TEST(SpecErrors, UnknownActivationNamesThePositionAndTheWord) {
    std::string msg;
    // "relux" starts at character 19 (1-based).
    EXPECT_EQ(create_status("input 4; dense 10 relux", &msg), SNN_ERR_SPEC);
    EXPECT_NE(msg.find("snn_model_create"), std::string::npos) << msg;
    EXPECT_NE(msg.find("position 19"), std::string::npos) << msg;
    EXPECT_NE(msg.find("relux"), std::string::npos) << msg;
}

TEST(SpecErrors, UnknownLayerAndBadNumbersAreSpecErrors) {
    std::string msg;
    EXPECT_EQ(create_status("input 4; dens 10", &msg), SNN_ERR_SPEC);
    EXPECT_NE(msg.find("position 10"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unknown layer"), std::string::npos) << msg;
    EXPECT_EQ(create_status("input 4; dense 0", &msg), SNN_ERR_SPEC);
    EXPECT_NE(msg.find("position 16"), std::string::npos) << msg;
    EXPECT_EQ(create_status("input 4; dense -3", &msg), SNN_ERR_SPEC);
    EXPECT_EQ(create_status("input 4x4; dense 2", &msg), SNN_ERR_SPEC);
    EXPECT_EQ(create_status("input 4x4x1; conv 3x3 2 stride=0", &msg), SNN_ERR_SPEC);
    EXPECT_NE(msg.find("stride"), std::string::npos) << msg;
    EXPECT_EQ(create_status("input 4; dense 2 init=uniform", &msg), SNN_ERR_SPEC);
    EXPECT_NE(msg.find("initialiser"), std::string::npos) << msg;
}

TEST(SpecErrors, StructureMustStartWithInputAndHaveLayers) {
    std::string msg;
    EXPECT_EQ(create_status("", &msg), SNN_ERR_SPEC);
    EXPECT_EQ(create_status("dense 3; input 4", &msg), SNN_ERR_SPEC);
    EXPECT_EQ(create_status("input 4", &msg), SNN_ERR_SPEC);
    EXPECT_EQ(create_status("input 4; dense 3; input 2", &msg), SNN_ERR_SPEC);
    snn_model *m = nullptr;
    EXPECT_EQ(snn_model_create(nullptr, &m), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(m, nullptr);
}

TEST(SpecErrors, KernelLargerThanInputIsAShapeErrorNamingLayerAndShapes) {
    std::string msg;
    EXPECT_EQ(create_status("input 3x3x8; conv 5x5 16", &msg), SNN_ERR_SHAPE);
    EXPECT_NE(msg.find("layer 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("conv 5x5 16"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3x3x8"), std::string::npos) << msg;
    EXPECT_NE(msg.find("5x5"), std::string::npos) << msg;
}

TEST(SpecErrors, LayerKindsMustFitTheirInput) {
    std::string msg;
    EXPECT_EQ(create_status("input 4x4x1; dense 3", &msg), SNN_ERR_SHAPE);
    EXPECT_NE(msg.find("flatten"), std::string::npos) << msg;
    EXPECT_EQ(create_status("input 16; conv 3 2", &msg), SNN_ERR_SHAPE);
    EXPECT_EQ(create_status("input 16; maxpool 2", &msg), SNN_ERR_SHAPE);
    EXPECT_EQ(create_status("input 4x4x1; flatten; dense 2; avgpool 2", &msg), SNN_ERR_SHAPE);
    EXPECT_EQ(create_status("input 4x4x1; maxpool 5", &msg), SNN_ERR_SHAPE);
    EXPECT_NE(msg.find("layer 1"), std::string::npos) << msg;
}

// Every size product is checked where shapes are inferred: the input's own
// c*h*w (which used to wrap to 0 here, so the network took 0 inputs and its
// forward pass read out of bounds), every layer's output, weights and a
// convolution's lowered input.
TEST(SpecErrors, SizesWhoseProductsOverflowAreShapeErrors) {
    std::string msg;
    EXPECT_EQ(create_status("input 16777216x16777216x65536; maxpool 16777216; flatten; dense 1", &msg),
              SNN_ERR_SHAPE);
    EXPECT_NE(msg.find("layer 0 (input): input 16777216x16777216x65536 is too large"), std::string::npos) << msg;
    EXPECT_EQ(create_status("input 46341x46341x1; maxpool 46341", &msg), SNN_ERR_SHAPE);  // 2^31 + 4633
    EXPECT_NE(msg.find("layer 0"), std::string::npos) << msg;
    EXPECT_EQ(create_status("input 65536x32768x2; maxpool 2", &msg), SNN_ERR_SHAPE);  // 2^32
    EXPECT_EQ(create_status("input 2147483648", &msg), SNN_ERR_SPEC);                 // above 2^24
    EXPECT_EQ(create_status("input 2x2x1; conv 1 16777216 pad=16777216", &msg), SNN_ERR_SHAPE);
    EXPECT_NE(msg.find("layer 1 (conv 1x1 16777216): output"), std::string::npos) << msg;
    EXPECT_EQ(create_status("input 16777216; dense 16777216", &msg), SNN_ERR_SHAPE);  // 2^48 weights
    EXPECT_NE(msg.find("weights too large"), std::string::npos) << msg;
    // A kernel of 2^21 taps over a 1024x1024 output: 2^41 lowered values per
    // sample, though weights and outputs are small.
    EXPECT_EQ(create_status("input 1x1x1; conv 1024x2048 1 pad=1023x1535", &msg), SNN_ERR_SHAPE);
    EXPECT_NE(msg.find("lowered input per sample too large"), std::string::npos) << msg;
}

TEST(Layout, SizesJustInsideTheLimitsAreAccepted) {
    Model big_input = make_model("input 46340x46340x1; maxpool 46340");  // 2147395600 <= 2^31
    EXPECT_EQ(input_size(big_input.get()), 2147395600u);
    EXPECT_EQ(output_size(big_input.get()), 1u);
    EXPECT_EQ(param_count(big_input.get()), 0u);
    Model wide_kernel = make_model("input 1x1x1; conv 1024x1024 1 pad=1023x767");  // (2^20 + 1) x 2^19
    int64_t c = 0, h = 0, w = 0;
    ASSERT_EQ(snn_model_layer_shape(wide_kernel.get(), 1, &c, &h, &w), SNN_OK);
    EXPECT_EQ(c, 1);
    EXPECT_EQ(h, 1024);
    EXPECT_EQ(w, 512);
    EXPECT_EQ(param_count(wide_kernel.get()), (size_t(1) << 20) + 1);
}

TEST(Layout, LayerShapesUseFloorDivision) {
    Model m = make_model("input 7x7x3; conv 3x3 5 stride=2 pad=1; maxpool 3; flatten; dense 2");
    int64_t count = 0, c = 0, h = 0, w = 0;
    ASSERT_EQ(snn_model_layer_count(m.get(), &count), SNN_OK);
    EXPECT_EQ(count, 5);
    const int64_t expected[5][3] = {{3, 7, 7}, {5, 4, 4}, {5, 1, 1}, {5, 1, 1}, {2, 1, 1}};
    for (int64_t l = 0; l < count; ++l) {
        ASSERT_EQ(snn_model_layer_shape(m.get(), l, &c, &h, &w), SNN_OK);
        EXPECT_EQ(c, expected[l][0]) << "layer " << l;
        EXPECT_EQ(h, expected[l][1]) << "layer " << l;
        EXPECT_EQ(w, expected[l][2]) << "layer " << l;
    }
    EXPECT_EQ(snn_model_layer_shape(m.get(), 5, &c, &h, &w), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(input_size(m.get()), 147u);
    EXPECT_EQ(output_size(m.get()), 2u);
}

// Per layer: weights [out][in] or [out][in][kh][kw], then the bias; layers
// without parameters take no room.
TEST(Layout, ParameterOffsetsFollowTheSpecOrder) {
    Model m = make_model("input 6x6x2; conv 3x3 4; maxpool 2; flatten; dense 5 nobias; dense 3");
    struct Expected {
        size_t weight_offset, weight_count, bias_count;
    };
    // conv: 4*2*3*3 = 72 weights then 4 biases; dense over 4*2*2 = 16
    // features: 80 weights, no bias; dense 3: 15 weights then 3 biases.
    const Expected expected[] = {{0, 0, 0}, {0, 72, 4}, {76, 0, 0}, {76, 0, 0}, {76, 80, 0}, {156, 15, 3}};
    for (int64_t l = 0; l < 6; ++l) {
        size_t wo = 99, wc = 99, bo = 99, bc = 99;
        ASSERT_EQ(snn_model_layer_params(m.get(), l, &wo, &wc, &bo, &bc), SNN_OK);
        EXPECT_EQ(wc, expected[l].weight_count) << "layer " << l;
        EXPECT_EQ(bc, expected[l].bias_count) << "layer " << l;
        if (wc) {
            EXPECT_EQ(wo, expected[l].weight_offset) << "layer " << l;
        }
        if (bc) {
            EXPECT_EQ(bo, wo + wc) << "layer " << l;
        }
    }
    EXPECT_EQ(param_count(m.get()), 174u);
}

// The dense layout is [out][in]: a weight set at row o, column i moves
// output o by exactly input i.
// Recurrent layers: per direction weight_ih [G*H][F], weight_hh [G*H][H],
// bias_ih and bias_hh [G*H] (PyTorch's order, forward then reverse), all
// reported as the layer's weights (the directions interleave weights and
// biases).
TEST(Layout, RecurrentParametersFollowPyTorchsOrder) {
    Model m = make_model("input seq 5x3; lstm 4 bidirectional; gru 2 nobias last");
    size_t wo = 99, wc = 99, bo = 99, bc = 99;
    ASSERT_EQ(snn_model_layer_params(m.get(), 1, &wo, &wc, &bo, &bc), SNN_OK);
    EXPECT_EQ(wo, 0u);
    EXPECT_EQ(wc, 2u * (16 * 3 + 16 * 4 + 2 * 16));
    EXPECT_EQ(bc, 0u);
    ASSERT_EQ(snn_model_layer_params(m.get(), 2, &wo, &wc, &bo, &bc), SNN_OK);
    EXPECT_EQ(wo, 288u);
    EXPECT_EQ(wc, 6u * 8 + 6u * 2);  // input: the 8 features of both directions
    EXPECT_EQ(bc, 0u);
    int64_t c = 0, h = 0, w = 0;
    ASSERT_EQ(snn_model_layer_shape(m.get(), 1, &c, &h, &w), SNN_OK);
    EXPECT_EQ(c, 8);
    EXPECT_EQ(h, 5);
    ASSERT_EQ(snn_model_layer_shape(m.get(), 2, &c, &h, &w), SNN_OK);
    EXPECT_EQ(c, 2);
    EXPECT_EQ(h, 1);
}

TEST(Layout, DenseWeightsAreOutByIn) {
    Model m = make_model("input 3; dense 2");
    std::vector<float> p(8, 0.0f);
    p[1 * 3 + 2] = 1.0f;  // W[1][2]
    p[6] = 0.5f;          // b[0]
    ASSERT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
    Forward f = make_forward(m.get(), 1);
    const std::vector<float> y = run(f.get(), m.get(), {10.0f, 20.0f, 30.0f});
    EXPECT_EQ(y, (std::vector<float>{0.5f, 30.0f}));
}

// Convolution weights are [out][in][kh][kw] and images [c][h][w]: a single
// weight at (out 1, in 1, row 0, column 1) copies input channel 1 shifted
// by one column into output channel 1.
TEST(Layout, ConvWeightsAndImagesAreChannelsFirst) {
    Model m = make_model("input 2x3x2; conv 1x2 2 nobias");
    std::vector<float> p(2 * 2 * 1 * 2, 0.0f);
    p[((1 * 2 + 1) * 1 + 0) * 2 + 1] = 1.0f;
    ASSERT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
    std::vector<float> x(12);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);  // [c][h][w]
    Forward f = make_forward(m.get(), 1);
    const std::vector<float> y = run(f.get(), m.get(), x);
    // Output 2x2x2: channel 0 all zero; channel 1 = x[1][r][c+1].
    EXPECT_EQ(y, (std::vector<float>{0, 0, 0, 0, 7, 8, 10, 11}));
}

// ---- sequence ops: embedding, posembed, seqpool, conv1d ----------------------------

TEST(SpecErrors, SequenceOpsNameTheirMistakes) {
    const struct {
        const char *spec;
        snn_status status;
        const char *message;
    } cases[] = {
        {"input tokens 4 vocab=5; embedding", SNN_ERR_SPEC, "embedding needs a positive number of features D"},
        {"input tokens 4 vocab=5; embedding 0", SNN_ERR_SPEC, "embedding needs a positive number of features D"},
        {"input tokens 4 vocab=5; embedding 3 pad=-1", SNN_ERR_SPEC,
         "spec position 37 ('pad=-1'): pad must be a token id, an integer >= 0"},
        {"input tokens 4 vocab=5; embedding 3 pad=5", SNN_ERR_SHAPE,
         "layer 1 (embedding 3 pad=5): pad=5 is not a token id of the vocabulary of 5"},
        {"input tokens 4 vocab=5; embedding 3 max_norm=1", SNN_ERR_SPEC, "unknown option 'max_norm=1' for embedding"},
        {"input seq 4x2; embedding 3", SNN_ERR_SHAPE, "input seq 4x2 is not token ids; embedding takes"},
        {"input tokens 4 vocab=5; posembed", SNN_ERR_SHAPE, "is token ids; add 'embedding D'"},
        {"input 6; posembed", SNN_ERR_SHAPE, "input 6 is not a sequence; posembed takes sequences"},
        {"input seq 4x2; posembed 4", SNN_ERR_SPEC, "unknown option '4' for posembed"},
        {"input seq 4x2; seqpool", SNN_ERR_SPEC, "seqpool needs last, mean or max"},
        {"input seq 4x2; seqpool first", SNN_ERR_SPEC, "spec position 24 ('first'): seqpool needs last, mean or max"},
        {"input seq 4x2; seqpool max max", SNN_ERR_SPEC, "unknown option 'max' for seqpool"},
        {"input 4x4x2; seqpool max", SNN_ERR_SHAPE, "is not a sequence; seqpool takes sequences"},
        {"input seq 4x2; conv1d", SNN_ERR_SPEC, "conv1d needs a kernel size K"},
        {"input seq 4x2; conv1d 3x3 2", SNN_ERR_SPEC, "conv1d needs a kernel size K, a positive integer"},
        {"input seq 4x2; conv1d 3", SNN_ERR_SPEC, "conv1d needs a positive number of output channels"},
        {"input seq 4x2; conv1d 3 2 stride=0", SNN_ERR_SPEC, "('stride=0'): expected a positive integer after '='"},
        {"input seq 4x2; conv1d 3 2 dilation=0", SNN_ERR_SPEC, "expected a positive integer after '='"},
        {"input seq 4x2; conv1d 3 2 pad=x", SNN_ERR_SPEC, "('pad=x'): expected an integer >= 0 after '='"},
        {"input seq 4x2; conv1d 3 2 groups=2", SNN_ERR_SPEC, "unknown option 'groups=2' for conv1d"},
        {"input seq 4x2; conv1d 3 2 dilation=2", SNN_ERR_SHAPE,
         "layer 1 (conv1d 3 2 dilation=2): input seq 4x2 (padded by 0) is shorter than the kernel's span of 5 steps"},
        {"input 8; conv1d 3 2", SNN_ERR_SHAPE, "input 8 is not a sequence; conv1d takes sequences"},
    };
    for (const auto &c : cases) {
        std::string msg;
        EXPECT_EQ(create_status(c.spec, &msg), c.status) << c.spec << ": " << msg;
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.spec << ": " << msg;
    }
}

// T' = floor((T + 2P - D(K-1) - 1) / S) + 1, as torch.nn.Conv1d; the
// weights [OUT][C][K], then the bias; embedding [V][D]; posembed [T][F].
TEST(Layout, SequenceOpShapesAndParameterCounts) {
    Model m = make_model("input tokens 10 vocab=7; embedding 4; posembed; conv1d 3 5 stride=2 pad=1 dilation=2; "
                         "conv1d 1 2 nobias; seqpool mean");
    EXPECT_EQ(param_count(m.get()), size_t(7 * 4 + 10 * 4 + 5 * 4 * 3 + 5 + 2 * 5));
    const std::pair<const char *, int64_t> steps[] = {{"input seq 1x2; conv1d 1 1", 1},
                                                      {"input seq 1x2; conv1d 3 1 pad=1", 1},
                                                      {"input seq 2x2; conv1d 1 1 pad=5 stride=4", 3},
                                                      {"input seq 9x2; conv1d 3 1 dilation=4", 1},
                                                      {"input seq 10x2; conv1d 4 1 stride=3 pad=2", 4}};
    for (const auto &[spec, t] : steps) {
        Model c = make_model(spec);
        EXPECT_EQ(int64_t(output_size(c.get())), t) << spec;
    }
}

// W[o][c][k] reads x[t S - P + k D][c] of a [T][C] sequence: a single weight
// at (out 1, channel 1, tap 2) with dilation 2 and padding 1 copies channel 1
// three steps later (2 D - P) into output 1.
TEST(Layout, Conv1dWeightsAreOutChannelTap) {
    Model m = make_model("input seq 6x2; conv1d 3 2 pad=1 dilation=2 nobias");
    std::vector<float> p(2 * 2 * 3, 0.0f);
    p[(1 * 2 + 1) * 3 + 2] = 1.0f;
    ASSERT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
    std::vector<float> x(12);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);  // [t][c]
    Forward f = make_forward(m.get(), 1);
    const std::vector<float> y = run(f.get(), m.get(), x);
    // T' = 6 + 2 - 4 - 1 + 1 = 4 steps of [out 0, out 1]; out 1 = x[t + 3][1].
    EXPECT_EQ(y, (std::vector<float>{0, 7, 0, 9, 0, 11, 0, 0}));
}

// attention heads=H [causal]: its canonical text, its parameters (PyTorch's
// in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias), and its
// errors: heads missing, zero, not dividing the features, given twice; an
// unknown option; an input that is not a sequence; scores too large.
TEST(Spec, AttentionCanonicalTextAndParameters) {
    Model m = make_model("input seq 5x6;attention   heads=2 causal name=a; attention heads=3");
    EXPECT_EQ(describe(m.get()), "input seq 5x6; attention heads=2 causal name=a; attention heads=3");
    EXPECT_EQ(param_count(m.get()), 2u * (3 * 36 + 3 * 6 + 36 + 6));
}

TEST(SpecErrors, AttentionOptionsAndShapes) {
    struct Case {
        const char *spec;
        snn_status status;
        const char *message;
    } cases[] = {
        {"input seq 5x6; attention", SNN_ERR_SPEC, "('attention'): attention needs heads=H (the number of heads)"},
        {"input seq 5x6; attention heads=0", SNN_ERR_SPEC, "spec position 26 ('heads=0'): heads must be a positive"},
        {"input seq 5x6; attention heads=x", SNN_ERR_SPEC, "heads must be a positive integer"},
        {"input seq 5x6; attention heads=4", SNN_ERR_SHAPE,
         "layer 1 (attention heads=4): 6 features do not split into 4 heads"},
        {"input seq 5x6; attention heads=2 mask", SNN_ERR_SPEC,
         "spec position 34: unknown option 'mask' for attention (expected heads=H, causal, name=... or from=...)"},
        {"input seq 5x6; attention heads=2 heads=3", SNN_ERR_SPEC, "heads= is given twice in one layer"},
        {"input seq 5x6; attention heads=2 causal causal", SNN_ERR_SPEC,
         "spec position 41 ('causal'): causal is given twice in one layer"},
        {"input 6; attention heads=2", SNN_ERR_SHAPE, "is not a sequence; attention takes sequences"},
        {"input 4x4x2; attention heads=2", SNN_ERR_SHAPE, "is not a sequence; attention takes sequences"},
        {"input seq 46341x2; attention heads=1", SNN_ERR_SHAPE, "scores per head too large"},
        {"input seq 4096x256; attention heads=256", SNN_ERR_SHAPE, "attention scores per sample too large"},
    };
    for (const Case &c : cases) {
        std::string msg;
        EXPECT_EQ(create_status(c.spec, &msg), c.status) << c.spec << ": " << msg;
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.spec << ": " << msg;
    }
}

}  // namespace
