// The cases of the op harness (test_ops.cpp): for every op of SNN_OP_LIST,
// small models that exercise it with one option set each, and the PyTorch
// golden files (tests/golden/data) that cover it. Every case runs in every
// mode of the harness. An op without a case, or a case without a golden
// file, does not compile (the static_asserts at the end).
#pragma once

#include <snn.h>
#include <stddef.h>
#include <stdint.h>

#include "core/op_list.h"

namespace op_harness {

using snn::OpKind;

constexpr size_t kMaxGoldens = 3;

struct OpCase {
    OpKind op;          // the op the case is for (its spec may hold others)
    const char *label;  // names the option set: letters, digits and _
    const char *spec;
    int64_t batch;
    float eps;          // step of the finite differences
    snn_loss loss;      // the loss of the finite differences and the timing
    // File stems in tests/golden/data whose spec holds the op, closest to
    // this option set first; unused entries are null.
    const char *goldens[kMaxGoldens];
    // Sequence models: the per-sample lengths ("3,1,4": batch values in
    // [1, T]), or null for full length. A case with lengths whose output is a
    // sequence uses cross-entropy (the target losses refuse padded steps).
    const char *lengths = nullptr;
};

constexpr snn_loss kMse = SNN_LOSS_MSE, kXent = SNN_LOSS_LOGIT_CROSSENTROPY;

// Steps: 1e-2 where the model is smooth; 1e-3 next to the kinks of relu,
// leaky_relu and max pooling; 3e-3 for the norms, whose curvature is larger.
constexpr OpCase kCases[] = {
    // input: vectors and images.
    {OpKind::input, "vector", "input 8; dense 8; tanh", 3, 1e-2f, kMse, {"layer_tanh_extremes"}},
    {OpKind::input, "image", "input 4x4x3; conv 1 5 tanh", 2, 1e-2f, kMse, {"conv_1x1_relu"}},

    // dense: every inline activation, no bias, both losses.
    {OpKind::dense, "identity", "input 5; dense 4; dense 3", 3, 1e-2f, kMse,
     {"mlp_tanh_mse_sgd_nesterov", "xent_logits_confident"}},
    {OpKind::dense, "relu", "input 5; dense 6 relu; dense 3", 3, 1e-3f, kMse, {"mlp_relu_mse_adam"}},
    {OpKind::dense, "leaky_relu", "input 5; dense 6 leaky_relu; dense 3", 3, 1e-3f, kMse,
     {"mlp_sigmoid_mse_rmsprop"}},
    {OpKind::dense, "tanh", "input 5; dense 6 tanh; dense 3", 3, 1e-2f, kMse,
     {"saturated_tanh_mse_adam"}},
    {OpKind::dense, "sigmoid", "input 5; dense 6 sigmoid; dense 3 sigmoid", 3, 1e-2f, kMse,
     {"saturated_sigmoid_mse_adam"}},
    {OpKind::dense, "gelu", "input 5; dense 5 gelu; dense 3", 3, 1e-2f, kMse,
     {"dense_gelu_inline_extremes", "dense_gelu_silu_inline"}},
    {OpKind::dense, "silu", "input 5; dense 5 silu; dense 3", 3, 1e-2f, kMse,
     {"dense_silu_inline_extremes"}},
    {OpKind::dense, "nobias", "input 5; dense 6 tanh nobias; dense 3 nobias", 2, 1e-2f, kMse,
     {"mlp_nobias_xent_adamw"}},
    {OpKind::dense, "crossentropy", "input 6; dense 8 tanh; dense 4", 5, 1e-2f, kXent,
     {"mlp_all_activations_xent_adam", "xent_logits_88"}},
    {OpKind::dense, "crossentropy_leaky_relu", "input 6; dense 8 leaky_relu; dense 5", 4, 1e-3f, kXent,
     {"mlp_leaky_relu_xent_sgd"}},

    // conv: stride, padding, non-square kernels, 1x1, the whole image, no
    // bias, fused activations.
    {OpKind::conv, "stride1_pad0", "input 5x5x2; conv 3x3 3 tanh", 2, 1e-2f, kMse,
     {"conv_1to4_stride1_pad0_relu"}},
    {OpKind::conv, "stride2_pad1", "input 6x6x2; conv 3x3 3 sigmoid stride=2 pad=1", 2, 1e-2f, kMse,
     {"conv_3to5_stride2_pad1_identity"}},
    {OpKind::conv, "nonsquare", "input 6x5x2; conv 3x2 2 tanh stride=2x1 pad=1x0", 2, 1e-2f, kMse,
     {"conv_2to3_kernel3x2_tanh"}},
    {OpKind::conv, "kernel1x1_relu", "input 3x3x3; conv 1 4 relu", 2, 1e-3f, kMse, {"conv_1x1_relu"}},
    {OpKind::conv, "whole_image_nobias", "input 4x4x2; conv 4x4 3 nobias", 3, 1e-2f, kMse,
     {"conv_kernel_equals_input", "conv_nobias_sigmoid_pad2"}},
    {OpKind::conv, "leaky_relu_stride2", "input 6x6x2; conv 2x2 3 leaky_relu stride=2", 2, 1e-3f, kMse,
     {"conv_leaky_relu_stride2"}},
    {OpKind::conv, "gelu", "input 5x5x2; conv 3 4 gelu", 2, 1e-2f, kMse, {"conv_silu_gelu_inline"}},
    {OpKind::conv, "silu", "input 5x5x2; conv 3 4 silu", 2, 1e-2f, kMse, {"conv_silu_gelu_inline"}},
    {OpKind::conv, "sigmoid_pad2", "input 4x5x2; conv 3 2 sigmoid pad=2", 2, 1e-2f, kMse,
     {"conv_nobias_sigmoid_pad2"}},
    // Stride 1 with many taps: the AVX-512 direct kernels where the processor
    // has them (two tiles of output channels and a remainder, maps narrower
    // than a vector, a kernel taller than wide).
    {OpKind::conv, "channels20_pad1", "input 5x6x20; conv 3 18 tanh pad=1", 2, 1e-2f, kMse,
     {"conv_1to4_stride1_pad0_relu"}},
    {OpKind::conv, "kernel5x3_pad2x1", "input 7x4x9; conv 5x3 11 pad=2x1 nobias", 3, 1e-2f, kMse,
     {"conv_2to3_kernel3x2_tanh"}},
    // Stride 1 with "same" padding on a map large enough for the bf16
    // kernels' shifted lowering (cpu/conv_bf16.cpp), a 5x5 kernel after a
    // 3x3, both input gradients through it.
    {OpKind::conv, "same_padding_large_map", "input 12x12x2; conv 3 3 pad=1 silu; conv 5 2 pad=2 nobias", 2, 1e-2f,
     kMse, {"conv_silu_gelu_inline"}},

    // maxpool and avgpool: square and rectangular windows, overlapping
    // (stride 1), sizes that do not divide (floor), first after the input.
    {OpKind::maxpool, "after_conv", "input 6x6x2; conv 3x3 2 tanh pad=1; maxpool 2; flatten; dense 3", 2,
     1e-3f, kXent, {"maxpool_2_over_6x6"}},
    {OpKind::maxpool, "first_overlapping", "input 5x6x2; maxpool 2x3 stride=1; flatten; dense 2", 2, 1e-3f,
     kMse, {"maxpool_2x3_stride1"}},
    {OpKind::maxpool, "cnn",
     "input 8x8x2; conv 3x3 3 relu pad=1; maxpool 2; conv 3x3 4 tanh; avgpool 2; flatten; dense 3", 3, 1e-3f,
     kXent, {"cnn_xent_adam"}},
    {OpKind::maxpool, "floor", "input 7x7x1; conv 1 2 tanh; maxpool 3", 2, 1e-3f, kMse,
     {"maxpool_3_over_7x7_floor"}},
    {OpKind::avgpool, "floor", "input 7x7x2; avgpool 3; flatten; dense 3", 2, 1e-2f, kMse,
     {"avgpool_3_over_7x7_floor"}},
    {OpKind::avgpool, "overlapping", "input 5x5x1; conv 2x2 2 sigmoid; avgpool 2 stride=1", 2, 1e-2f, kMse,
     {"avgpool_2x3_stride1"}},
    {OpKind::avgpool, "rectangular", "input 5x6x2; avgpool 2x3 stride=1x2", 2, 1e-2f, kMse,
     {"avgpool_2x3_stride1", "avgpool_2_over_6x6"}},
    {OpKind::globalavgpool, "image", "input 4x3x3; conv 3 2 pad=1 tanh; globalavgpool; flatten; dense 2", 2,
     1e-2f, kMse, {"concat_images", "resnet_block_sgd"}},

    // flatten: right after the input, and between convolutions and dense.
    {OpKind::flatten, "first", "input 3x2x2; flatten; dense 3 tanh", 2, 1e-2f, kMse, {"maxpool_2_over_6x6"}},
    {OpKind::flatten, "after_conv", "input 4x4x2; conv 3 2 tanh; flatten; dense 3", 2, 1e-2f, kMse,
     {"conv_kernel_equals_input", "avgpool_2_over_6x6"}},

    // add and concat: gradients that reach a value from several consumers
    // are summed (a value read by three layers; the inputs read by an add;
    // a value read both through flatten's alias and by concat).
    {OpKind::add, "residual_block",
     "input 4x4x2; conv 3 2 pad=1 name=a; batchnorm; relu; conv 3 2 pad=1 nobias; batchnorm; add a; relu; "
     "globalavgpool; flatten; dense 3",
     3, 3e-3f, kMse, {"resnet_block_sgd", "resnet_block_adam_eval"}},
    {OpKind::add, "to_the_inputs", "input 4 name=x; dense 4 tanh; add x; dense 2", 3, 1e-2f, kMse,
     {"add_input_skip"}},
    {OpKind::add, "three_readers", "input 5; dense 4 tanh name=h; dense 4 tanh; add h; concat h; dense 2", 3,
     1e-2f, kMse, {"add_concat_same_layer"}},
    {OpKind::concat, "branches",
     "input 3x3x2 name=x; conv 3 3 pad=1 tanh; concat x; conv 1 2; flatten; dense 2", 2, 1e-2f, kMse,
     {"concat_images"}},
    {OpKind::concat, "alias_and_concat", "input 2x2x2; conv 1 2 tanh; flatten name=f; dense 8 tanh; concat f; "
     "dense 3", 2, 1e-2f, kMse, {"concat_vectors"}},

    // activation as a layer of its own, on vectors and on images.
    {OpKind::activation, "relu", "input 5; dense 6; relu; dense 3", 3, 1e-3f, kMse, {"layer_relu_extremes"}},
    {OpKind::activation, "leaky_relu", "input 5; dense 6; leaky_relu; dense 3", 3, 1e-3f, kMse,
     {"layer_leaky_relu_extremes"}},
    {OpKind::activation, "tanh", "input 5; dense 6; tanh; dense 3", 3, 1e-2f, kMse, {"layer_tanh_extremes"}},
    {OpKind::activation, "sigmoid", "input 5; dense 6; sigmoid; dense 3", 3, 1e-2f, kMse,
     {"layer_sigmoid_extremes"}},
    {OpKind::activation, "gelu", "input 5; dense 6; gelu; dense 3", 3, 1e-2f, kMse,
     {"layer_gelu_extremes", "layer_activations_chain"}},
    {OpKind::activation, "silu", "input 5; dense 6; silu; dense 3", 3, 1e-2f, kMse,
     {"layer_silu_extremes", "layer_activations_chain"}},
    {OpKind::activation, "gelu_image", "input 4x4x2; conv 3 3 pad=1; gelu", 2, 1e-2f, kMse,
     {"layer_gelu_extremes"}},
    {OpKind::activation, "silu_image", "input 4x4x2; conv 3 3 pad=1; silu", 2, 1e-2f, kMse,
     {"layer_silu_extremes"}},

    // softmax over the features of vectors and the channels of each pixel.
    {OpKind::softmax, "vector", "input 5; dense 4; softmax", 3, 1e-2f, kMse,
     {"layer_softmax_vector_extremes"}},
    {OpKind::softmax, "image", "input 4x3x2; conv 3 4 pad=1; softmax", 2, 1e-2f, kMse,
     {"layer_softmax_image_extremes"}},

    // batchnorm of vectors and images, eps and momentum, as the output.
    {OpKind::batchnorm, "vector", "input 6; dense 5; batchnorm; tanh; dense 3", 4, 3e-3f, kMse,
     {"batchnorm1d_train_sgd", "batchnorm1d_eval_batch_1"}},
    {OpKind::batchnorm, "image", "input 4x4x2; conv 3 3; batchnorm; tanh; flatten; dense 2", 2, 3e-3f, kMse,
     {"batchnorm2d_train_adam", "batchnorm2d_eval_dropout"}},
    {OpKind::batchnorm, "eps_momentum", "input 4; dense 5 nobias; batchnorm eps=0.01 momentum=0.3; tanh; "
     "dense 2", 3, 3e-3f, kMse, {"batchnorm1d_eps_momentum", "batchnorm2d_momentum_1_eps_1"}},
    {OpKind::batchnorm, "output_momentum_0", "input 4; dense 3; batchnorm momentum=0", 5, 3e-3f, kMse,
     {"batchnorm2d_momentum_0_dead_channel", "batchnorm2d_momentum_0_999"}},

    // layernorm over each sample's features, or its channels and pixels.
    {OpKind::layernorm, "vector", "input 6; dense 5; layernorm; tanh; dense 3", 3, 3e-3f, kMse,
     {"layernorm_vector"}},
    {OpKind::layernorm, "vector_eps", "input 6; dense 5; layernorm eps=0.1; silu; dense 2", 3, 3e-3f, kMse,
     {"layernorm_eval"}},
    {OpKind::layernorm, "image", "input 4x4x2; conv 3 3 pad=1; layernorm; tanh; flatten; dense 2", 2, 3e-3f,
     kMse, {"layernorm_image_eps"}},

    // dropout: a fixed mask in training mode (the seed), the identity in
    // inference mode.
    {OpKind::dropout, "vector", "input 6; dense 8 tanh; dropout 0.3; dense 3", 3, 1e-2f, kMse,
     {"dropout_0_train"}},
    {OpKind::dropout, "image", "input 4x4x2; conv 3 3 pad=1; dropout 0.5; tanh", 2, 1e-2f, kMse,
     {"batchnorm2d_eval_dropout"}},

    // Sequences [T][F]: the ops above acting on the last axis, with lengths
    // (the cross-entropy of a sequence output leaves out padded steps).
    {OpKind::input, "sequence", "input seq 6x5; dense 7 gelu; layernorm; dense 4", 3, 1e-2f, kXent,
     {"seq_dense_gelu_layernorm"}, "6,1,4"},
    {OpKind::dense, "sequence", "input seq 4x3; dense 5 tanh; dense 2", 2, 1e-2f, kMse, {"seq_dense_tanh_mse"}},
    {OpKind::dense, "sequence_lengths", "input seq 6x5; dense 7 gelu; layernorm; dense 4", 3, 1e-2f, kXent,
     {"seq_dense_gelu_layernorm"}, "2,6,1"},
    {OpKind::layernorm, "sequence", "input seq 3x6; layernorm eps=0.001; sigmoid; dense 3", 2, 3e-3f, kXent,
     {"seq_saturated_layernorm"}, "3,2"},
    {OpKind::softmax, "sequence", "input seq 5x4; dense 4; softmax; dense 3", 3, 1e-2f, kXent,
     {"seq_softmax_residual"}, "5,2,3"},
    {OpKind::activation, "sequence", "input seq 5x4; dense 4; tanh; dense 3", 2, 1e-2f, kXent,
     {"seq_saturated_layernorm"}, "1,5"},
    {OpKind::add, "sequence", "input seq 5x4; dense 4 name=a; tanh; dense 4; add a; dense 3", 2, 1e-2f, kMse,
     {"seq_softmax_residual"}},
    {OpKind::flatten, "sequence", "input seq 3x4; dense 2 tanh; flatten; dense 3", 2, 1e-2f, kMse,
     {"seq_softmax_residual"}},
    {OpKind::dropout, "sequence", "input seq 4x3; dense 5 tanh; dropout 0.3; dense 2", 3, 1e-2f, kXent,
     {"dropout_0_train"}, "4,1,3"},

    // embedding (repeated ids), posembed, seqpool (every mode at lengths 1,
    // T and between) and conv1d (padding keeping T, stride and dilation,
    // padding wider than the kernel, one output step, inline activations).
    // The pad row of embedding pad=P gets no gradient though it moves the
    // loss, as torch's padding_idx: its goldens check it, not the finite
    // differences.
    {OpKind::embedding, "mean", "input tokens 6 vocab=5; embedding 4; seqpool mean; dense 3", 4, 1e-2f, kXent,
     {"seq_embedding_pad_mean"}, "6,1,3,6"},
    {OpKind::embedding, "flatten", "input tokens 3 vocab=4; embedding 2; flatten; dense 2", 5, 1e-2f, kMse,
     {"seq_embedding_flatten", "seq_embedding_last_eval"}},
    {OpKind::embedding, "sequence_output", "input tokens 5 vocab=7; embedding 6; dense 3", 3, 1e-2f, kXent,
     {"seq_embedding_last_eval"}, "5,2,1"},
    {OpKind::posembed, "max", "input seq 5x4; posembed; seqpool max; dense 2", 3, 1e-3f, kMse,
     {"seq_posembed_max"}, "5,1,2"},
    {OpKind::posembed, "sequence_output", "input seq 4x3; dense 3 tanh; posembed; dense 2", 2, 1e-2f, kXent,
     {"seq_posembed_conv_eval"}, "1,4"},
    {OpKind::seqpool, "last", "input seq 6x3; dense 4 tanh; seqpool last", 4, 1e-2f, kMse, {"seq_pool_last"},
     "1,6,3,5"},
    {OpKind::seqpool, "mean", "input seq 6x3; dense 4; seqpool mean; dense 2", 3, 1e-2f, kXent,
     {"seq_pool_mean"}, "6,1,4"},
    {OpKind::seqpool, "max", "input seq 7x2; dense 3 tanh; seqpool max", 4, 1e-3f, kMse,
     {"seq_pool_max", "seq_pool_max_full_eval"}, "7,1,2,5"},
    {OpKind::seqpool, "max_full_length", "input seq 4x3; seqpool max; dense 2", 3, 1e-3f, kMse,
     {"seq_pool_max_full_eval", "seq_pool_max_ties"}},
    {OpKind::conv1d, "same_lengths", "input seq 8x3; conv1d 3 4 tanh pad=1; seqpool mean", 3, 1e-2f, kMse,
     {"seq_conv1d_same_lengths", "seq_posembed_conv_eval"}, "8,1,5"},
    {OpKind::conv1d, "stride_dilation", "input seq 11x2; conv1d 3 3 stride=2 pad=1 dilation=2; flatten; dense 2",
     3, 1e-2f, kXent, {"seq_conv1d_stride_dilation"}},
    {OpKind::conv1d, "wide_pad_nobias", "input seq 3x2; conv1d 2 3 pad=3 nobias sigmoid; flatten; dense 2", 2,
     1e-2f, kMse, {"seq_conv1d_wide_pad_nobias"}},
    {OpKind::conv1d, "one_step_relu", "input seq 5x4; conv1d 5 3 relu; flatten", 3, 1e-3f, kMse,
     {"seq_conv1d_one_step"}},
    {OpKind::conv1d, "gelu_silu", "input seq 6x3; conv1d 3 4 gelu pad=1; conv1d 1 3 silu", 3, 1e-2f, kXent,
     {"seq_conv1d_gelu_silu_eval"}, "6,2,1"},

    // attention: several heads, one head, a head per feature, causal, with
    // lengths 1 and T in one batch; in a pre-norm block with the
    // cross-entropy of every valid step.
    {OpKind::attention, "heads2", "input seq 5x8; attention heads=2", 3, 1e-2f, kXent, {"attention_heads2"},
     "5,1,3"},
    {OpKind::attention, "causal", "input seq 6x4; attention heads=2 causal", 3, 1e-2f, kXent,
     {"attention_causal_lengths"}, "6,2,1"},
    {OpKind::attention, "heads1", "input seq 4x6; attention heads=1", 2, 1e-2f, kXent, {"attention_heads1_tiny"},
     "4,1"},
    {OpKind::attention, "head_per_feature", "input seq 4x4; attention heads=4 causal", 2, 1e-2f, kMse,
     {"attention_heads_e_causal"}},
    {OpKind::attention, "block_crossentropy",
     "input seq 6x8; dense 8 name=h; layernorm; attention heads=2 causal; add h; dense 5", 3, 1e-2f, kXent,
     {"attention_block_xent"}, "6,1,4"},
    // The words example's length, T = 20. (Few features: the GPU mode's
    // parameters, all in [0.5, 1.5], make scores of the order of E^3, whose
    // float32 rounding decides the rows that nearly tie, differently on
    // each backend.)
    {OpKind::attention, "steps20", "input seq 20x8; attention heads=4 causal", 2, 1e-2f, kXent,
     {"attention_saturated", "attention_saturated_eval"}, "20,7"},

    // lstm and gru: the sequence of states, one or both directions, the
    // final state (last), no biases, stacked (the input gradient of a
    // recurrent layer), a classifier per step or on the final state; with
    // lengths 1 and T among others.
    {OpKind::lstm, "sequence", "input seq 5x3; lstm 4", 3, 1e-2f, kMse, {"lstm_long_t40"}},
    {OpKind::lstm, "sequence_lengths", "input seq 5x3; lstm 4", 3, 1e-2f, kXent, {"lstm_lengths_1_and_t"}, "5,1,3"},
    {OpKind::lstm, "bidirectional", "input seq 4x3; lstm 3 bidirectional", 2, 1e-2f, kXent,
     {"lstm_lengths_1_and_t", "lstm_bidirectional_eval"}, "4,2"},
    {OpKind::lstm, "bidirectional_xent_per_step", "input seq 5x3; lstm 3 bidirectional; dense 3", 3, 1e-2f,
     kXent, {"lstm_lengths_1_and_t"}, "5,2,1"},
    {OpKind::lstm, "bidirectional_last_xent", "input seq 4x3; lstm 3 bidirectional last; dense 3", 3, 1e-2f,
     kXent, {"lstm_bidirectional_last_xent", "lstm_saturated"}, "4,1,3"},
    {OpKind::lstm, "stacked_nobias", "input seq 4x2; lstm 3 nobias; lstm 2 last nobias", 2, 1e-2f, kMse,
     {"lstm_stacked_nobias"}, "1,4"},
    {OpKind::gru, "sequence", "input seq 5x3; gru 4", 3, 1e-2f, kMse, {"gru_long_t40"}},
    {OpKind::gru, "sequence_lengths", "input seq 5x3; gru 4", 3, 1e-2f, kXent, {"gru_lengths_1_and_t"}, "5,1,3"},
    {OpKind::gru, "bidirectional", "input seq 4x3; gru 3 bidirectional", 2, 1e-2f, kXent,
     {"gru_lengths_1_and_t", "gru_bidirectional_eval"}, "4,2"},
    {OpKind::gru, "bidirectional_xent_per_step", "input seq 5x3; gru 3 bidirectional; dense 3", 3, 1e-2f,
     kXent, {"gru_lengths_1_and_t"}, "5,2,1"},
    {OpKind::gru, "bidirectional_last_xent", "input seq 4x3; gru 3 bidirectional last; dense 3", 3, 1e-2f,
     kXent, {"gru_bidirectional_last_xent", "gru_saturated"}, "4,1,3"},
    {OpKind::gru, "stacked_nobias", "input seq 4x2; gru 3 nobias; gru 2 last nobias", 2, 1e-2f, kMse,
     {"gru_stacked_nobias"}, "1,4"},
};

constexpr size_t kCaseCount = sizeof(kCases) / sizeof(kCases[0]);

constexpr bool has_case(OpKind op) {
    for (const OpCase &c : kCases)
        if (c.op == op) return true;
    return false;
}

constexpr bool every_case_has_a_golden() {
    for (const OpCase &c : kCases)
        if (c.goldens[0] == nullptr) return false;
    return true;
}

// Coverage: an op of the registry without a case stops the build here.
#define SNN_OP_HAS_CASE(name) \
    static_assert(has_case(OpKind::name), "op '" #name "' has no case in kCases (tests/ops/op_cases.h)");
SNN_OP_LIST(SNN_OP_HAS_CASE)
#undef SNN_OP_HAS_CASE

static_assert(every_case_has_a_golden(), "a case of kCases lists no golden file");

}  // namespace op_harness
