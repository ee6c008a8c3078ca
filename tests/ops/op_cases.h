// The cases of the op harness (test_ops.cpp), on two axes:
//
//   kCases: for every op of SNN_OP_LIST, small models that exercise it with
//     one option set each, and the PyTorch golden files (tests/golden/data)
//     that cover it. Every case runs in every mode of the harness. An op
//     without a case, or a case without a golden file, does not compile (the
//     static_asserts at the end);
//   kKernelPaths: the shapes that take the GPU kernels' other paths (rows
//     longer than a block, 300x301 images, channels split over blocks, batch
//     257, more values than the emulated grid's threads, large logits), run
//     in the Gpu mode only: on a GPU, and on the emulated one under its three
//     thread orders, against the CPU within each case's tolerances.
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
    // Stride 1 with many taps: the AVX-512 or AVX2 direct kernels where the
    // processor has them (two tiles of output channels and a remainder, maps narrower
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
    // Branches read with from=: a ResNet downsampling block whose shortcut
    // is a 1x1 convolution of stride 2 from the stem; a branch of the
    // inputs; two branches of an image joined by concat; a value read both
    // through flatten's alias and by a convolution from= it.
    {OpKind::add, "projection_shortcut",
     "input 6x6x2; conv 3 3 pad=1 tanh name=a; conv 3 4 stride=2 pad=1 nobias; batchnorm; tanh; "
     "conv 3 4 pad=1 name=main; conv 1 4 stride=2 from=a; add main; tanh; globalavgpool; flatten; dense 3",
     3, 3e-3f, kXent, {"resnet_downsample_projection"}},
    {OpKind::input, "branch_from_input", "input 5 name=x; dense 4 tanh name=a; dense 4 sigmoid from=x; add a; "
     "dense 2", 3, 1e-2f, kMse, {"branches_from_input_concat"}},
    {OpKind::concat, "two_branches_from",
     "input 4x4x2 name=x; conv 3 3 pad=1 tanh name=a; conv 1 2 sigmoid from=x; concat a; flatten; dense 3", 2,
     1e-2f, kMse, {"branches_from_input_concat", "concat_images"}},
    {OpKind::flatten, "alias_read_from", "input 4x4x2; conv 3 3 pad=1 tanh name=c; flatten name=f; "
     "conv 1 2 sigmoid from=c; flatten; concat f; dense 3", 2, 1e-2f, kMse, {"flatten_from_shared"}},

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


// ---- kernel paths ----------------------------------------------------------------------

// Tolerances of the emulated GPU against the CPU, relative to max(1, |cpu|);
// 0 asks for the same bits (any NaN equal to any NaN). aux is what a node
// keeps for its backward pass. A GPU is held to the Gpu mode's float32
// tolerances instead (its math functions round otherwise).
struct Tolerance {
    float y, aux, state, dx, grads;
};

constexpr Tolerance kExact = {0, 0, 0, 0, 0};
// Sums in double in another order than the CPU (softmax's total, the norms'
// statistics): the last bit of a float may differ.
constexpr Tolerance kSoftmaxSums = {2e-7f, 0, 0, 2e-7f, 0};
constexpr Tolerance kNormSums = {1e-6f, 1e-6f, 1e-6f, 1e-6f, 1e-6f};
constexpr Tolerance kLayernormSums = {1e-6f, 1e-6f, 0, 1e-6f, 1e-6f};
// Models with products (the emulation's cuBLAS adds in another order than
// OpenBLAS), as the Gpu mode holds a GPU to.
constexpr Tolerance kProducts = {1e-4f, 1e-4f, 1e-5f, 1e-3f, 1e-3f};

// The inputs of each node: uniform in [-3, 3], 40 times that (softmax's
// large logits, where e^x overflows or every term underflows unless each
// group's own maximum is subtracted first; y and dx must be finite), or on a
// grid of 0.5 (ties: the first maximum), with a NaN a third of the way in.
// Token ids are always uniform, with the first id 0 and the last vocab - 1.
enum class Values { uniform, times40, grid, grid_nan };

// The modes a case runs in.
enum class Modes { both, training, inference };

constexpr size_t kMaxKernels = 5;

struct KernelPathCase {
    OpKind op;
    const char *label;  // letters, digits and _
    const char *spec;   // every node of it is compared
    int64_t batch;
    Tolerance tol;
    // The CUDA kernels the case launches (checked in the emulated build);
    // unused entries are null.
    const char *kernels[kMaxKernels];
    Values values = Values::uniform;
    Modes modes = Modes::both;
    const char *lengths = nullptr;  // as OpCase's
    int64_t plan_batch = 0;         // the batch the nodes are planned for, if above batch
    uint64_t pass = 7;              // of dropout's key
    // Under the emulation's three thread orders, or in order only (a model of
    // several ops: the single-op paths check its kernels' orders).
    bool every_order = true;
};

constexpr const char *kActivationKernels[kMaxKernels] = {"activation_forward_kernel",
                                                         "activation_backward_kernel"};
constexpr const char *kSoftmaxRows[kMaxKernels] = {"softmax_rows_forward_kernel", "softmax_rows_backward_kernel"};
constexpr const char *kSoftmaxPixels[kMaxKernels] = {"softmax_pixels_forward_kernel",
                                                     "softmax_pixels_backward_kernel"};
constexpr const char *kBatchnormWhole[kMaxKernels] = {"batchnorm_forward_kernel", "batchnorm_backward_kernel"};
// Channels split over several blocks (cuda/batchnorm.cu's slices).
constexpr const char *kBatchnormSplit[kMaxKernels] = {"batchnorm_sum_kernel", "batchnorm_squares_kernel",
                                                      "batchnorm_apply_kernel", "batchnorm_grad_sums_kernel",
                                                      "batchnorm_grad_apply_kernel"};
constexpr const char *kLayernormKernels[kMaxKernels] = {"layernorm_forward_kernel", "layernorm_param_grads_kernel",
                                                        "layernorm_input_grad_kernel"};
constexpr const char *kDropoutKernels[kMaxKernels] = {"dropout_forward_kernel", "dropout_backward_kernel"};
// Windows that tile the map take the tiled backward pass.
constexpr const char *kMaxpoolTiled[kMaxKernels] = {"maxpool_forward_kernel", "maxpool_backward_tiled_kernel"};
constexpr const char *kMaxpoolOverlapping[kMaxKernels] = {"maxpool_forward_kernel", "maxpool_backward_kernel"};
constexpr const char *kAvgpoolKernels[kMaxKernels] = {"avgpool_forward_kernel", "avgpool_backward_kernel"};
constexpr const char *kEmbeddingKernels[kMaxKernels] = {"embedding_forward_kernel", "embedding_grad_kernel"};
constexpr const char *kPosembedKernels[kMaxKernels] = {"posembed_forward_kernel", "posembed_grad_kernel"};
constexpr const char *kSeqpoolKernels[kMaxKernels] = {"seqpool_forward_kernel", "seqpool_backward_kernel"};
constexpr const char *kNone[kMaxKernels] = {};

#define SNN_KERNELS(list) {list[0], list[1], list[2], list[3], list[4]}

constexpr KernelPathCase kKernelPaths[] = {
    // activation as a layer: each function on rows and on images, and more
    // values than the emulated grid's threads.
#define SNN_ACTIVATION_PATHS(act)                                                                                \
    {OpKind::activation, #act "_rows33", "input 33; " #act, 3, kExact, SNN_KERNELS(kActivationKernels),         \
     Values::uniform, Modes::training},                                                                          \
    {OpKind::activation, #act "_image", "input 7x5x33; " #act, 1, kExact, SNN_KERNELS(kActivationKernels),      \
     Values::uniform, Modes::inference},
    SNN_ACTIVATION_PATHS(relu) SNN_ACTIVATION_PATHS(leaky_relu) SNN_ACTIVATION_PATHS(tanh)
    SNN_ACTIVATION_PATHS(sigmoid) SNN_ACTIVATION_PATHS(gelu) SNN_ACTIVATION_PATHS(silu)
#undef SNN_ACTIVATION_PATHS
    {OpKind::activation, "gelu_rows300001", "input 300001; gelu", 1, kExact, SNN_KERNELS(kActivationKernels),
     Values::uniform, Modes::training},
    {OpKind::activation, "tanh_rows300001", "input 300001; tanh", 1, kExact, SNN_KERNELS(kActivationKernels),
     Values::uniform, Modes::training},

    // softmax: rows of one value, within a block and longer; pixels of
    // images (a 300x301 map: more pixels than the emulated grid's threads);
    // large logits in rows within a block and longer and in pixels.
#define SNN_SOFTMAX_ROWS(features, n)                                                                           \
    {OpKind::softmax, "rows" #features "_batch" #n, "input " #features "; softmax", n, kSoftmaxSums,            \
     SNN_KERNELS(kSoftmaxRows), Values::uniform, Modes::training},
    SNN_SOFTMAX_ROWS(1, 1) SNN_SOFTMAX_ROWS(1, 3) SNN_SOFTMAX_ROWS(1, 257)
    SNN_SOFTMAX_ROWS(33, 1) SNN_SOFTMAX_ROWS(33, 3) SNN_SOFTMAX_ROWS(33, 257)
    SNN_SOFTMAX_ROWS(65, 1) SNN_SOFTMAX_ROWS(65, 3) SNN_SOFTMAX_ROWS(65, 257)
    SNN_SOFTMAX_ROWS(300001, 1)
#undef SNN_SOFTMAX_ROWS
    {OpKind::softmax, "image7x5x33", "input 7x5x33; softmax", 3, kSoftmaxSums, SNN_KERNELS(kSoftmaxPixels),
     Values::uniform, Modes::training},
    {OpKind::softmax, "image300x301", "input 300x301x1; softmax", 1, kSoftmaxSums, SNN_KERNELS(kSoftmaxPixels),
     Values::uniform, Modes::training},
    {OpKind::softmax, "image9x7x65", "input 9x7x65; softmax", 1, kSoftmaxSums, SNN_KERNELS(kSoftmaxPixels),
     Values::uniform, Modes::inference},
    {OpKind::softmax, "large_logits_rows65", "input 65; softmax", 3, kSoftmaxSums, SNN_KERNELS(kSoftmaxRows),
     Values::times40, Modes::training},
    {OpKind::softmax, "large_logits_rows1000", "input 1000; softmax", 2, kSoftmaxSums, SNN_KERNELS(kSoftmaxRows),
     Values::times40, Modes::training},
    {OpKind::softmax, "large_logits_image7x5x33", "input 7x5x33; softmax", 3, kSoftmaxSums,
     SNN_KERNELS(kSoftmaxPixels), Values::times40, Modes::training},
    {OpKind::softmax, "large_logits_image30x31x3", "input 30x31x3; softmax", 1, kSoftmaxSums,
     SNN_KERNELS(kSoftmaxPixels), Values::times40, Modes::training},

    // batchnorm: one value per channel and more than a block's threads
    // (batch 257), 10000 values a channel (40x50 at batch 5); channels split
    // over several blocks (a 300x301 image, a vector at batch 20000).
#define SNN_BATCHNORM_ROWS(features, n)                                                                         \
    {OpKind::batchnorm, "rows" #features "_batch" #n, "input " #features "; batchnorm", n, kNormSums,           \
     SNN_KERNELS(kBatchnormWhole)},
    SNN_BATCHNORM_ROWS(1, 3) SNN_BATCHNORM_ROWS(1, 257) SNN_BATCHNORM_ROWS(33, 3) SNN_BATCHNORM_ROWS(33, 257)
    SNN_BATCHNORM_ROWS(65, 3) SNN_BATCHNORM_ROWS(65, 257)
#undef SNN_BATCHNORM_ROWS
    {OpKind::batchnorm, "image_momentum", "input 7x5x33; batchnorm momentum=0.3", 3, kNormSums,
     SNN_KERNELS(kBatchnormWhole)},
    {OpKind::batchnorm, "image_eps", "input 3x3x65; batchnorm eps=0.01", 1, kNormSums,
     SNN_KERNELS(kBatchnormWhole)},
    {OpKind::batchnorm, "image300x301_split", "input 300x301x1; batchnorm", 1, kNormSums,
     SNN_KERNELS(kBatchnormSplit)},
    {OpKind::batchnorm, "image40x50", "input 40x50x3; batchnorm", 5, kNormSums, SNN_KERNELS(kBatchnormWhole)},
    {OpKind::batchnorm, "batch20000_split", "input 3; batchnorm", 20000, kNormSums, SNN_KERNELS(kBatchnormSplit)},

    // layernorm: rows within a block at batches 1, 3 and 257, rows of 2
    // features (whose dx is the small difference of two nearly equal terms:
    // both sides take it in core/math_rows.h's layernorm_dx form), an image,
    // and a row longer than the emulated grid's threads.
#define SNN_LAYERNORM_ROWS(n)                                                                                   \
    {OpKind::layernorm, "rows33_batch" #n, "input 33; layernorm", n, kLayernormSums,                            \
     SNN_KERNELS(kLayernormKernels), Values::uniform, Modes::training},                                         \
    {OpKind::layernorm, "rows65_eps_batch" #n, "input 65; layernorm eps=0.001", n, kLayernormSums,              \
     SNN_KERNELS(kLayernormKernels), Values::uniform, Modes::inference},                                        \
    {OpKind::layernorm, "rows2_batch" #n, "input 2; layernorm", n, kLayernormSums,                              \
     SNN_KERNELS(kLayernormKernels), Values::uniform, Modes::training},
    SNN_LAYERNORM_ROWS(1) SNN_LAYERNORM_ROWS(3) SNN_LAYERNORM_ROWS(257)
#undef SNN_LAYERNORM_ROWS
    {OpKind::layernorm, "image7x5x33", "input 7x5x33; layernorm", 3, kLayernormSums,
     SNN_KERNELS(kLayernormKernels), Values::uniform, Modes::training},
    {OpKind::layernorm, "rows300001", "input 300001; layernorm", 1, kLayernormSums, SNN_KERNELS(kLayernormKernels),
     Values::uniform, Modes::training},

    // dropout: the mask is the same counter-based numbers on both, bit for
    // bit, for two passes' keys; more values than the emulated grid's
    // threads (its grid-stride loop goes round).
#define SNN_DROPOUT_ROWS(n)                                                                                     \
    {OpKind::dropout, "rows65_batch" #n, "input 65; dropout 0.3", n, kExact, SNN_KERNELS(kDropoutKernels)},     \
    {OpKind::dropout, "rows65_next_pass_batch" #n, "input 65; dropout 0.3", n, kExact,                          \
     SNN_KERNELS(kDropoutKernels), Values::uniform, Modes::training, nullptr, 0, 8},
    SNN_DROPOUT_ROWS(1) SNN_DROPOUT_ROWS(3) SNN_DROPOUT_ROWS(257)
#undef SNN_DROPOUT_ROWS
    {OpKind::dropout, "image7x5x33", "input 7x5x33; dropout 0.5", 3, kExact, SNN_KERNELS(kDropoutKernels),
     Values::uniform, Modes::training},
    {OpKind::dropout, "rows300001", "input 300001; dropout 0.1", 1, kExact, SNN_KERNELS(kDropoutKernels),
     Values::uniform, Modes::training},

    // maxpool: windows that tile the map (with uncovered rows and columns),
    // overlapping or spaced windows, a 300x301 map; inputs with ties, and a
    // NaN at batch 3.
#define SNN_MAXPOOL(label, spec, kernels)                                                                       \
    {OpKind::maxpool, label "_batch1", spec, 1, kExact, SNN_KERNELS(kernels), Values::grid, Modes::training},   \
    {OpKind::maxpool, label "_nan_batch3", spec, 3, kExact, SNN_KERNELS(kernels), Values::grid_nan,             \
     Modes::training},
    SNN_MAXPOOL("tiled7x9x33", "input 7x9x33; maxpool 2", kMaxpoolTiled)
    SNN_MAXPOOL("stride2_9x7", "input 9x7x1; maxpool 3 stride=2", kMaxpoolOverlapping)
    SNN_MAXPOOL("overlapping2x3", "input 5x6x65; maxpool 2x3 stride=1x2", kMaxpoolOverlapping)
    SNN_MAXPOOL("tiled4x3", "input 10x11x3; maxpool 4x3", kMaxpoolTiled)
    SNN_MAXPOOL("tiled8x8", "input 8x8x2; maxpool 2", kMaxpoolTiled)
    SNN_MAXPOOL("spaced", "input 9x9x2; maxpool 2 stride=3", kMaxpoolOverlapping)
#undef SNN_MAXPOOL
    {OpKind::maxpool, "image300x301_nan", "input 300x301x1; maxpool 2", 1, kExact, SNN_KERNELS(kMaxpoolTiled),
     Values::grid_nan, Modes::training},

    // avgpool and globalavgpool: tiling, strided and overlapping windows,
    // a 300x301 map.
#define SNN_AVGPOOL(op, label, spec, kernels)                                                                   \
    {OpKind::op, label "_batch3", spec, 3, kExact, SNN_KERNELS(kernels), Values::uniform, Modes::training},     \
    {OpKind::op, label "_batch1", spec, 1, kExact, SNN_KERNELS(kernels), Values::uniform, Modes::inference},
    SNN_AVGPOOL(avgpool, "tiled7x9x33", "input 7x9x33; avgpool 2", kAvgpoolKernels)
    SNN_AVGPOOL(avgpool, "stride2_9x7", "input 9x7x1; avgpool 3 stride=2", kAvgpoolKernels)
    SNN_AVGPOOL(avgpool, "overlapping2x3", "input 5x6x65; avgpool 2x3 stride=1x2", kAvgpoolKernels)
    SNN_AVGPOOL(globalavgpool, "image7x5x33", "input 7x5x33; globalavgpool", kAvgpoolKernels)
#undef SNN_AVGPOOL
    {OpKind::avgpool, "image300x301", "input 300x301x1; avgpool 3 stride=2", 1, kExact,
     SNN_KERNELS(kAvgpoolKernels), Values::uniform, Modes::training},
    {OpKind::globalavgpool, "image300x301", "input 300x301x1; globalavgpool", 1, kExact,
     SNN_KERNELS(kAvgpoolKernels), Values::uniform, Modes::training},

    // embedding: repeated ids, the pad id looked up, a row wider than a
    // block; more values, and columns x partitions, than the emulated grid's
    // threads (the grid-stride loops go round). Each dW value is summed by
    // one thread in the CPU's order: the same bits.
#define SNN_EMBEDDING(label, spec)                                                                              \
    {OpKind::embedding, label "_batch1", spec, 1, kExact, SNN_KERNELS(kEmbeddingKernels), Values::uniform,      \
     Modes::training},                                                                                          \
    {OpKind::embedding, label "_batch3", spec, 3, kExact, SNN_KERNELS(kEmbeddingKernels), Values::uniform,      \
     Modes::training},
    SNN_EMBEDDING("width33", "input tokens 7 vocab=5; embedding 33")
    SNN_EMBEDDING("pad0", "input tokens 7 vocab=5; embedding 3 pad=0")
    SNN_EMBEDDING("width257_pad_last", "input tokens 1 vocab=300; embedding 257 pad=299")
#undef SNN_EMBEDDING
    {OpKind::embedding, "vocab3000", "input tokens 9 vocab=3000; embedding 40 pad=7", 5, kExact,
     SNN_KERNELS(kEmbeddingKernels), Values::uniform, Modes::inference},

    // posembed at batches 1, 3 and 257, and a step wider than the emulated
    // grid's threads.
    {OpKind::posembed, "batch1", "input seq 7x33; posembed", 1, kExact, SNN_KERNELS(kPosembedKernels),
     Values::uniform, Modes::training},
    {OpKind::posembed, "batch3", "input seq 7x33; posembed", 3, kExact, SNN_KERNELS(kPosembedKernels),
     Values::uniform, Modes::training},
    {OpKind::posembed, "batch257", "input seq 7x33; posembed", 257, kExact, SNN_KERNELS(kPosembedKernels),
     Values::uniform, Modes::training},
    {OpKind::posembed, "features300001", "input seq 1x300001; posembed", 1, kExact, SNN_KERNELS(kPosembedKernels),
     Values::uniform, Modes::inference},

    // seqpool, each mode: full length, lengths 1, T and between; ties (the
    // first maximum) and a NaN (kept once found).
#define SNN_SEQPOOL(mode)                                                                                       \
    {OpKind::seqpool, #mode "_batch1", "input seq 9x33; seqpool " #mode, 1, kExact, SNN_KERNELS(kSeqpoolKernels), \
     Values::grid},                                                                                             \
    {OpKind::seqpool, #mode "_lengths_nan", "input seq 9x33; seqpool " #mode, 4, kExact,                        \
     SNN_KERNELS(kSeqpoolKernels), Values::grid_nan, Modes::training, "1,9,4,7"},                               \
    {OpKind::seqpool, #mode "_nan", "input seq 9x33; seqpool " #mode, 4, kExact, SNN_KERNELS(kSeqpoolKernels),  \
     Values::grid_nan, Modes::inference},
    SNN_SEQPOOL(last) SNN_SEQPOOL(mean) SNN_SEQPOOL(max)
#undef SNN_SEQPOOL
    {OpKind::seqpool, "max_features300001", "input seq 2x300001; seqpool max", 1, kExact,
     SNN_KERNELS(kSeqpoolKernels), Values::uniform, Modes::training},

    // Models of several ops, planned for a larger batch than they run:
    // norms in a residual block, inline and standalone activations, dropout
    // and softmax of images, the sequence ops, conv1d's lowering in chunks
    // of 13 samples (2^22 floats of 1000 x 320), the recurrent ops; more
    // values per channel, per sample and per softmax than a block's threads.
#define SNN_MODEL(op, label, spec, batch, plan_batch)                                                           \
    {OpKind::op, label, spec, batch, kProducts, SNN_KERNELS(kNone), Values::uniform, Modes::both, nullptr,      \
     plan_batch, 7, /*every_order=*/false},
    SNN_MODEL(batchnorm, "residual_block",
              "input 6x6x3; conv 3 4 pad=1 name=a; batchnorm; relu; conv 3 4 pad=1; batchnorm; add a; relu; "
              "globalavgpool; flatten; dense 3", 5, 8)
    SNN_MODEL(add, "projection_shortcut_from",
              "input 6x6x3; conv 3 4 pad=1 relu name=a; conv 3 8 stride=2 pad=1 nobias; batchnorm; relu; "
              "conv 3 8 pad=1 name=main; conv 1 8 stride=2 from=a; add main; relu; globalavgpool; flatten; dense 3",
              5, 8)
    SNN_MODEL(batchnorm, "vector_eps_momentum", "input 10; dense 8; batchnorm eps=0.001 momentum=0.25; tanh; dense 3",
              5, 8)
    SNN_MODEL(layernorm, "gelu_dropout_silu_concat",
              "input 10; dense 8 gelu name=h; layernorm; dropout 0.3; dense 8 silu; concat h; dense 3", 5, 8)
    SNN_MODEL(layernorm, "image_after_conv",
              "input 5x4x3; conv 3 2 pad=1 silu; layernorm eps=0.0001; flatten; dense 2", 5, 8)
    SNN_MODEL(softmax, "after_dense", "input 12; dense 7; softmax", 5, 8)
    SNN_MODEL(softmax, "image_after_conv", "input 5x4x3; conv 3 6 pad=1; softmax; flatten; dense 2", 5, 8)
#define SNN_STANDALONE(act) SNN_MODEL(activation, "standalone_" #act, "input 11; dense 13; " #act "; dense 3", 5, 8)
    SNN_STANDALONE(relu) SNN_STANDALONE(leaky_relu) SNN_STANDALONE(tanh) SNN_STANDALONE(sigmoid)
    SNN_STANDALONE(gelu) SNN_STANDALONE(silu)
#undef SNN_STANDALONE
    SNN_MODEL(activation, "standalone_images",
              "input 5x5x2; conv 3 3 pad=1; gelu; conv 3 3 pad=1; sigmoid; flatten; dense 2", 5, 8)
    SNN_MODEL(dropout, "image_after_conv", "input 6x6x2; conv 3 2 pad=1; dropout 0.5; flatten; dense 3", 5, 8)
    SNN_MODEL(conv1d, "posembed_conv1d_seqpool",
              "input seq 9x6; posembed; conv1d 3 8 relu pad=1; conv1d 2 5 gelu stride=2 dilation=2; seqpool max; "
              "dense 3", 5, 8)
    SNN_MODEL(conv1d, "lowered_in_chunks", "input seq 1000x64; conv1d 5 8 pad=2 tanh; seqpool mean; dense 2", 17, 40)
    SNN_MODEL(lstm, "lstm_gru_bidirectional_last", "input seq 6x4; lstm 8 bidirectional; gru 5 last; dense 3", 5, 8)
    SNN_MODEL(batchnorm, "batch257_features300", "input 20; dense 300; batchnorm; layernorm; dropout 0.2; softmax",
              257, 257)
    SNN_MODEL(batchnorm, "batch257_images",
              "input 7x5x3; conv 3 5 pad=1; batchnorm; gelu; softmax; globalavgpool; flatten; dense 4", 257, 257)
#undef SNN_MODEL
};

#undef SNN_KERNELS


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
