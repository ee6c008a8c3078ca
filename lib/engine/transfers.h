// Everything that crosses between a caller's buffers and a model or cache:
// parameters, state, inputs, outputs, targets, labels. Each function holds
// the invariants of the fields it writes (batches, pass records, write
// counts), so the C boundary only checks its arguments and calls one of them.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "engine/network.h"

namespace snn {

// What a model's state can hold, the one rule of snn_set_state and of model
// files: every count (num_batches_tracked) is a whole number in [0, 2^24]
// with a clear sign bit, what a file's I64 count reads back as; running
// statistics, like parameters, may be any float. Returns the first value of
// `state` (a host copy of net's state vector, named `what` in the text) that
// breaks it, described, or "" when none does.
std::string state_problem(const Network &net, const float *state, const char *what);

// ---- data sets -------------------------------------------------------------------
// Samples (and optionally labels) uploaded once to a device, for gathering
// batches without a host copy.
struct Dataset {
    Backend *backend = nullptr;
    OwnedStream stream;
    DeviceBuffer samples, labels, lengths;
    std::vector<int32_t> host_labels;  // for validating gathered labels on the host
    size_t count = 0, features = 0;
    size_t labels_per_sample = 1;
    // Token data sets: ids stored as floats (features = T per sample), the
    // largest id (checked against a model's vocabulary), and optionally
    // per-sample lengths (has_lengths).
    bool tokens = false;
    int32_t max_token = 0;
    bool has_lengths = false;
};
// Uploads count x features samples and, when labels is non-null, count x
// labels_per_sample labels (already checked) to `be`, and waits for the
// upload.
void dataset_init(Dataset &d, Backend &be, const float *samples, size_t count, size_t features,
                  const int32_t *labels, size_t labels_per_sample = 1);
// The same for token ids (count x steps, already checked >= 0) and
// optionally lengths (count values in [1, steps], checked).
void dataset_init_tokens(Dataset &d, Backend &be, const int32_t *tokens, size_t count, size_t steps,
                         const int32_t *lengths, const int32_t *labels, size_t labels_per_sample);

// ---- models ----------------------------------------------------------------------
// Host copies of all parameters or all state (param_count / state_count
// floats; a count of 0 touches nothing, src and dst may then be null).
// The setters count as writes that backprop checks (Model::Writes).
void model_get_parameters(const Model &m, float *dst);
void model_set_parameters(Model &m, const float *src, const char *by);
void model_get_state(const Model &m, float *dst);
// SNN_ERR_INVALID_ARGUMENT (state_problem) with the state unchanged.
void model_set_state(Model &m, const float *src, const char *by);

// ---- forward caches --------------------------------------------------------------
size_t input_features(const ForwardCache &c);
size_t output_features(const ForwardCache &c);
// The batch of the next inputs, in [1, max_batch] (SNN_ERR_BATCH); a change
// drops the inputs set for the old one.
void forward_set_batch(ForwardCache &c, int64_t batch);
void forward_set_training(ForwardCache &c, bool training);
// Dropout's random stream: the seed and the training passes since.
void forward_set_rng(ForwardCache &c, uint64_t seed, uint64_t passes);
// New inputs (the last pass's are replaced; `by` names the call): batch x
// features host floats for the current batch; the same on the cache's
// device (a GPU); or rows indices[0..n) of a host array or of a data set's
// device buffer (samples_stream orders after its upload), which set the
// batch to n (n in [1, max_batch], indices already checked).
void forward_set_inputs(ForwardCache &c, const float *host, const char *by);
void forward_set_inputs_device(ForwardCache &c, const float *device, const char *by);
void forward_gather_inputs(ForwardCache &c, const float *host, const int64_t *indices, size_t n, const char *by);
void forward_gather_inputs_device(ForwardCache &c, Stream *samples_stream, const float *samples,
                                  const int64_t *indices, size_t n, const char *by);
// Token ids (the model's input is 'input tokens', ids already checked
// against its vocabulary): batch x T ids of the current batch, or rows
// indices[0..n) of a host array (the batch becomes n), converted to floats.
void forward_set_tokens(ForwardCache &c, const int32_t *host, const char *by);
void forward_gather_tokens(ForwardCache &c, const int32_t *host, const int64_t *indices, size_t n, const char *by);
// Lengths of the samples of the inputs set (input_batch values in [1, T],
// checked), from host memory, rows of a host array or of a data set's
// device lengths; they count as a change of the inputs for backprop.
void forward_set_lengths(ForwardCache &c, const int32_t *host);
void forward_gather_lengths(ForwardCache &c, const int32_t *host, const int64_t *indices, size_t n);
void forward_gather_lengths_device(ForwardCache &c, Stream *lengths_stream, const int32_t *lengths,
                                   const int64_t *indices, size_t n);
// forward_batch x outputs floats of the last pass (SNN_ERR_STATE when none).
size_t forward_output_count(const ForwardCache &c);
void forward_get_outputs(const ForwardCache &c, float *dst);

// ---- backward caches -------------------------------------------------------------
// Targets: whole samples of `outputs` floats, count already checked.
void backward_set_targets(BackwardCache &b, const float *host, size_t count);
// Labels of n samples (n in [1, max_batch], labels and indices checked;
// labels_per_sample(net) labels per sample, one per step of a sequence output):
// from host memory, rows of a host array, or rows of a data set's device
// labels (labels_stream orders after their upload).
void backward_set_labels(BackwardCache &b, const int32_t *host, size_t n);
void backward_gather_labels(BackwardCache &b, const int32_t *host, const int64_t *indices, size_t n);
void backward_gather_labels_device(BackwardCache &b, Stream *labels_stream, const int32_t *labels,
                                   const int64_t *indices, size_t n);
void backward_set_input_gradient(BackwardCache &b, bool wanted);
// Whether backprop may differentiate f's last pass of m: there is one, its
// batch fits b, and nothing it read (inputs, parameters, and in inference
// mode the state) was written since. SNN_ERR_STATE / SNN_ERR_BATCH naming
// the writer otherwise.
void check_pass_intact(const BackwardCache &b, const ForwardCache &f, const Model &m);
// The parameter gradient: param_count floats either way; setting one makes
// it the cache's gradient (finite as far as the caller checked).
void backward_get_gradients(const BackwardCache &b, float *dst);
void backward_set_gradients(BackwardCache &b, const float *src);
// input_grad_batch x features floats of the last backprop's input gradient
// (SNN_ERR_STATE when it made none).
size_t input_gradient_count(const BackwardCache &b);
void backward_get_input_gradients(const BackwardCache &b, float *dst);

// ---- optimisers ------------------------------------------------------------------
// One step from b's gradient: SNN_ERR_STATE without a gradient or after
// 2^53 steps, SNN_ERR_NOT_FINITE for a non-finite one (parameters
// unchanged); counts as a parameter write.
void optimiser_checked_step(Optimiser &o, Model &m, const BackwardCache &b);

}  // namespace snn
