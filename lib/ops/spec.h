// The description of a model: a graph of nodes (layers) in topological
// order, their shapes, and where each node's parameters and state lie in the
// two flat vectors. Parsed from and printed back to the textual spec (see
// include/snn.h); each op's part of it lives in its descriptor (lib/ops).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "core/math.h"
#include "core/op_list.h"

namespace snn {

enum class Init : int32_t { glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_normal, zeros };
// What seqpool keeps of a sequence: its last valid step, their mean or maximum.
enum class SeqPool : int32_t { last, mean, max };

// Shape of one sample: c x h x w; a vector of n features is n x 1 x 1 with
// is_image false. A sequence of T steps of F features ([time][features],
// features fastest) is c = F, h = T, w = 1 with is_seq; token ids
// (is_tokens, from 'input tokens T vocab=V') are a sequence with c = 1 whose
// values are integers in [0, V), stored as floats.
struct Shape {
    int64_t c = 0, h = 1, w = 1;
    bool is_image = false;
    bool is_seq = false;
    bool is_tokens = false;
    int64_t size() const { return c * h * w; }
    // Steps per sample: T for a sequence, else 1.
    int64_t steps() const { return is_seq ? h : 1; }
    // Values per step: F for a sequence, else the whole sample. Ops acting
    // on the last axis (dense, layernorm, softmax) see n * steps() rows of
    // row_size() values.
    int64_t row_size() const { return is_seq ? c : size(); }
    bool operator==(const Shape &o) const {
        return c == o.c && h == o.h && w == o.w && is_image == o.is_image && is_seq == o.is_seq &&
               is_tokens == o.is_tokens;
    }
};
// The shape of a sequence of `steps` steps of `features` values.
inline Shape seq_shape(int64_t features, int64_t steps) { return {features, steps, 1, false, true, false}; }

// One tensor of a node as files name it ("layers.<i>.<suffix>"): a slice of
// the parameters or of the state.
struct TensorSlot {
    std::string suffix;           // "weight", "bias", "running_mean", ...
    std::vector<int64_t> shape;   // as PyTorch stores it
    bool state = false;           // in the state vector, else the parameters
    bool int64 = false;           // stored as I64 in files (a count)
    size_t offset = 0, count = 0; // in its vector
};

struct Layer {
    OpKind kind = OpKind::input;
    std::string name;             // name=ID, or empty
    std::vector<int32_t> inputs;  // indices of the nodes read, in order; inputs[0] the previous
                                  // one, or the earlier one from=ID names

    // Attributes (each op uses its own; the rest keep their defaults).
    int64_t units = 0;            // dense: outputs; conv: output channels
    int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
    Act act = Act::identity;
    int64_t heads = 0;            // attention: heads=H
    bool causal = false;          // attention: each step attends to steps up to itself
    bool bias = true;
    Init init = Init::glorot_uniform;
    double p = 0.0;               // dropout probability
    double eps = 1e-5;            // batchnorm, layernorm
    double momentum = 0.1;        // batchnorm
    int64_t dilation = 1;         // conv1d (kernel size in kh, stride in sh, padding in ph)
    int64_t pad_index = -1;       // embedding: pad=P, the row kept at zero, or -1
    SeqPool pool = SeqPool::last; // seqpool
    bool bidirectional = false;   // lstm, gru: a reverse direction too
    bool last = false;            // lstm, gru: only the final hidden state

    // Filled by shape inference.
    Shape in, out;                // in: the shape of inputs[0]
    size_t weight_offset = 0, weight_count = 0;
    size_t bias_offset = 0, bias_count = 0;
    size_t state_offset = 0, state_count = 0;
    std::vector<TensorSlot> tensors;
    // What the op keeps for its backward pass: its inputs' values, its output
    // value, and aux floats of its own (per sample, plus a fixed part).
    bool keeps_input = false, keeps_output = false;
    size_t aux_per_sample = 0, aux_fixed = 0;
    // The output is the input's memory, reshaped (flatten): no kernel runs.
    bool alias = false;

    bool has_params() const { return weight_count + bias_count > 0; }
};

struct Network {
    std::vector<Layer> layers;  // layers[0] is the input; inputs of a node come before it
    size_t param_count = 0;
    size_t state_count = 0;

    const Shape &input() const { return layers.front().out; }
    const Shape &output() const { return layers.back().out; }
};

// Parses a spec; throws SNN_ERR_SPEC (position and reason) or SNN_ERR_SHAPE.
Network parse_spec(const std::string &spec);
// The canonical spec, which parse_spec turns back into the same network.
std::string describe(const Network &net);
// Whether layer `index` reads an earlier layer than the one before it
// (from=ID) as its first input.
inline bool reads_earlier(const Layer &l, size_t index) {
    return index > 0 && !l.inputs.empty() && size_t(l.inputs[0]) + 1 != index;
}
// "layer 3 (conv 5x5 16)", or "layer 5 (conv 1x1 16 from=a)", for messages.
std::string layer_label(const Network &net, size_t index);

// Deterministic initialisation of every parameter and every state value
// (host memory).
void init_parameters(const Network &net, uint64_t seed, float *params);
void init_state(const Network &net, float *state);

const char *act_name(Act a);
const char *init_name(Init i);

}  // namespace snn
