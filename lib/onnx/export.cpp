// ONNX export (onnx.h): each node of snn's network becomes a few standard
// ONNX nodes (opset 17) computing what snn's kernels compute, in inference
// mode. The graph:
//
//   input    "input": float [batch, F] (vectors), [batch, C, H, W] (images,
//            NCHW as snn stores them), [batch, T, F] (sequences), or int64
//            [batch, T] (token ids); "batch" is symbolic, the rest fixed.
//   lengths  with ExportOptions::lengths, "lengths": int32 [batch], each in
//            [1, T], as snn_set_lengths.
//   output   "output": float, in snn's output layout ([batch, F],
//            [batch, C, H, W] or [batch, T, F]).
//
// Each parameter tensor is a float32 initializer (raw_data, the values bit
// for bit) named as in snn's model files, "layers.<i>.<suffix>" with
// PyTorch's shape; lstm and gru instead take ONNX's W, R and B
// ("layers.<i>.W", ".R", ".B": the same values with the gates reordered).
// The node patterns, per op (x the node's input):
//
//   dense        vectors: Gemm(x, weight, bias, transB=1); sequences:
//                MatMul(x, Transpose(weight)) then Add(bias); then the act
//   conv         Conv(x, weight, bias) then the act
//   maxpool, avgpool, globalavgpool   MaxPool, AveragePool, GlobalAveragePool
//   flatten      Flatten(axis=1) (nothing on a vector)
//   add          Add; concat: Concat(axis=1) (channels, or features)
//   activation   Relu, LeakyRelu(0.01), Tanh, Sigmoid; gelu as
//                x * 0.5 * (1 + Erf(x / sqrt 2)); silu as x * Sigmoid(x)
//   softmax      Softmax(axis=1 on images, -1 otherwise)
//   batchnorm    BatchNormalization with the running statistics (inference
//                form; momentum = 1 - M, ONNX's convention); sequences are
//                flattened around it (snn normalises each of T*F values)
//   layernorm    LayerNormalization(axis=1 on images, -1 otherwise)
//   dropout      Dropout(x, ratio=P): the identity in inference mode (no
//                training_mode input), P kept for import
//   embedding    Gather(weight, ids, axis=0)
//   posembed     Add(x, weight)
//   seqpool      last: Gather of step T-1, or GatherND of step length-1;
//                mean: ReduceMean, or ReduceSum of the valid steps / length;
//                max: ReduceMax (padded steps first set to -inf)
//   conv1d       Transpose to [batch, C, T], Conv, Transpose back, the act;
//                with lengths, padded steps are zeroed first (snn reads them
//                as zeros)
//   attention    MatMul with Transpose(in_proj_weight), Add(in_proj_bias),
//                Slices into Q, K, V, heads by Reshape/Transpose, scores
//                MatMul * 1/sqrt(E/H), plus a constant -inf mask above the
//                diagonal when causal and -inf at keys past each length,
//                Softmax, MatMul, heads joined, out_proj as in_proj
//   lstm, gru    Transpose to [T, batch, F], LSTM / GRU (layout 0; gru with
//                linear_before_reset=1), sequence_lens = lengths; the states
//                Y [T, dirs, batch, H] to [batch, T, dirs*H], or with last
//                Y_h [dirs, batch, H] to [batch, dirs*H]
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "onnx/onnx.h"
#include "onnx/proto.h"
#include "ops/spec.h"
#include "ops/spec_text.h"

namespace snn {
namespace onnx {
namespace {

Attribute attr_int(const char *name, int64_t v) {
    Attribute a;
    a.name = name;
    a.type = kAttrInt;
    a.i = v;
    return a;
}
Attribute attr_ints(const char *name, std::vector<int64_t> v) {
    Attribute a;
    a.name = name;
    a.type = kAttrInts;
    a.ints = std::move(v);
    return a;
}
Attribute attr_float(const char *name, float v) {
    Attribute a;
    a.name = name;
    a.type = kAttrFloat;
    a.f = v;
    return a;
}
Attribute attr_string(const char *name, const char *v) {
    Attribute a;
    a.name = name;
    a.type = kAttrString;
    a.s = v;
    return a;
}

// Little-endian bytes of 32- and 64-bit values, as raw_data holds them.
void put_le(std::string &out, uint64_t v, int bytes) {
    for (int b = 0; b < bytes; ++b) out.push_back(char((v >> (8 * b)) & 0xff));
}
std::string float_bytes(const float *v, size_t n) {
    std::string s;
    s.reserve(4 * n);
    for (size_t k = 0; k < n; ++k) {
        uint32_t bits;
        memcpy(&bits, &v[k], 4);
        put_le(s, bits, 4);
    }
    return s;
}

Dim batch_dim() {
    Dim d;
    d.param = "batch";
    return d;
}
Dim fixed_dim(int64_t v) {
    Dim d;
    d.value = v;
    return d;
}

// The dimensions of a batch of values of shape s, after "batch".
std::vector<int64_t> sample_dims(const Shape &s) {
    if (s.is_image) return {s.c, s.h, s.w};
    if (s.is_seq) return s.is_tokens ? std::vector<int64_t>{s.h} : std::vector<int64_t>{s.h, s.c};
    return {s.c};
}

ValueInfo value_info(const char *name, int32_t elem_type, const std::vector<int64_t> &dims) {
    ValueInfo v;
    v.name = name;
    v.elem_type = elem_type;
    v.has_shape = true;
    v.shape.push_back(batch_dim());
    for (int64_t d : dims) v.shape.push_back(fixed_dim(d));
    return v;
}

class Exporter {
public:
    Exporter(const Network &net, const float *params, const float *state, const ExportOptions &options)
        : net_(net), params_(params), state_(state), options_(options) {}

    std::string run() {
        Model &m = model_;
        m.ir_version = kExportIrVersion;
        m.opset_import.push_back({"", kExportOpset});
        m.producer_name = "snn";
        m.producer_version = SNN_VERSION_STRING;
        m.doc_string = "snn model: " + describe(net_);
        // What the graph cannot hold, for snn's own import (import_model
        // uses it only when the graph computes exactly what it says): the
        // spec with its names, initialisers and embedding padding rows, and
        // batchnorm's counts of training passes.
        m.metadata_props.push_back({"snn.spec", describe(net_)});
        std::string counts;
        for (const Layer &l : net_.layers)
            for (const TensorSlot &t : l.tensors)
                if (t.state && t.int64) {
                    for (size_t k = 0; k < t.count; ++k)
                        counts += (counts.empty() ? "" : ",") + format("%.0f", double(state_[t.offset + k]));
                }
        if (!counts.empty()) m.metadata_props.push_back({"snn.state_counts", counts});
        m.graph.name = "snn";
        add_inputs();
        out_.assign(net_.layers.size(), std::string());
        out_[0] = "input";
        for (layer_ = 1; layer_ < net_.layers.size(); ++layer_) {
            count_ = 0;
            out_[layer_] = emit_layer(net_.layers[layer_]);
        }
        layer_ = net_.layers.size() - 1;
        name_output(out_[layer_]);
        m.graph.output.push_back(value_info("output", kFloat, sample_dims(net_.output())));
        return write_model(m);
    }

private:
    const Network &net_;
    const float *params_, *state_;
    const ExportOptions options_;
    Model model_;
    size_t layer_ = 0;                  // the layer being written
    int count_ = 0;                     // nodes written for it
    std::vector<std::string> out_;      // each layer's output value
    std::map<std::string, std::string> consts_;  // constant initializers by type, dims and bytes
    std::string valid_;                 // made when first needed

    Graph &graph() { return model_.graph; }
    const Layer &layer() const { return net_.layers[layer_]; }

    [[noreturn]] void refuse(const std::string &why) const {
        fail(SNN_ERR_UNSUPPORTED, "%s: %s", layer_label(net_, layer_).c_str(), why.c_str());
    }

    // ---- the graph's inputs ----------------------------------------------------------

    void add_inputs() {
        const Shape &in = net_.input();
        graph().input.push_back(value_info("input", in.is_tokens ? kInt64 : kFloat, sample_dims(in)));
        if (!options_.lengths) return;
        if (!in.is_seq)
            fail(SNN_ERR_UNSUPPORTED, "lengths: %s is not a sequence (its shape is %s): the model has no lengths",
                 layer_label(net_, 0).c_str(), shape_text(in).c_str());
        for (size_t i = 1; i < net_.layers.size(); ++i) {
            const Shape &out = net_.layers[i].out;
            if (out.is_seq && out.h != in.h)
                fail(SNN_ERR_UNSUPPORTED,
                     "lengths: %s outputs %lld steps, the input %lld: lengths need every sequence layer to keep "
                     "the input's steps",
                     layer_label(net_, i).c_str(), (long long)out.h, (long long)in.h);
        }
        graph().input.push_back(value_info("lengths", kInt32, {}));
    }

    // The value of input k of the current layer.
    std::string input(size_t k) const { return out_[size_t(layer().inputs[k])]; }

    // The last value a layer wrote becomes "output": renamed where a node of
    // the last layer wrote it, else copied by Identity.
    void name_output(const std::string &value) {
        const std::string prefix = "layers." + std::to_string(layer_) + ".";
        for (Node &n : graph().node)
            for (std::string &o : n.output)
                if (o == value && value.compare(0, prefix.size(), prefix) == 0) {
                    o = "output";
                    return;
                }
        graph().node.push_back(make_node("Identity", {value}, {"output"}, {}));
    }

    // ---- nodes and initializers ---------------------------------------------------------

    Node make_node(const char *type, std::vector<std::string> in, std::vector<std::string> out,
                   std::vector<Attribute> attrs) {
        Node n;
        n.op_type = type;
        n.name = "layers." + std::to_string(layer_) + "." + type + "." + std::to_string(count_++);
        n.input = std::move(in);
        n.output = std::move(out);
        n.attribute = std::move(attrs);
        return n;
    }

    // A node of one output; returns the output's name.
    std::string node(const char *type, std::vector<std::string> in, std::vector<Attribute> attrs = {}) {
        const std::string out = "layers." + std::to_string(layer_) + "." + std::to_string(count_) + "." + type;
        graph().node.push_back(make_node(type, std::move(in), {out}, std::move(attrs)));
        return out;
    }
    // A node of several outputs ("" for one left out); names them.
    std::vector<std::string> node_outputs(const char *type, std::vector<std::string> in, std::vector<bool> used,
                                          std::vector<Attribute> attrs) {
        std::vector<std::string> outs;
        for (size_t k = 0; k < used.size(); ++k)
            outs.push_back(used[k] ? "layers." + std::to_string(layer_) + "." + std::to_string(count_) + "." +
                                         type + "." + std::to_string(k)
                                   : std::string());
        graph().node.push_back(make_node(type, std::move(in), outs, std::move(attrs)));
        return outs;
    }

    std::string initializer(const std::string &name, int32_t type, const std::vector<int64_t> &dims,
                            std::string bytes) {
        Tensor t;
        t.name = name;
        t.data_type = type;
        t.dims = dims;
        t.raw_data = std::move(bytes);
        graph().initializer.push_back(std::move(t));
        return name;
    }

    // A constant, shared by every node that uses the same one.
    std::string constant(int32_t type, const std::vector<int64_t> &dims, std::string bytes) {
        std::string key = std::to_string(type) + ":";
        for (int64_t d : dims) key += std::to_string(d) + ",";
        key += ":" + bytes;
        auto it = consts_.find(key);
        if (it != consts_.end()) return it->second;
        const std::string name = "const." + std::to_string(consts_.size());
        consts_.emplace(key, name);
        return initializer(name, type, dims, std::move(bytes));
    }
    std::string ints(const std::vector<int64_t> &dims, const std::vector<int64_t> &v) {
        std::string bytes;
        for (int64_t x : v) put_le(bytes, uint64_t(x), 8);
        return constant(kInt64, dims, bytes);
    }
    std::string int32s(const std::vector<int64_t> &dims, const std::vector<int32_t> &v) {
        std::string bytes;
        for (int32_t x : v) put_le(bytes, uint32_t(x), 4);
        return constant(kInt32, dims, bytes);
    }
    std::string floats(const std::vector<int64_t> &dims, const std::vector<float> &v) {
        return constant(kFloat, dims, float_bytes(v.data(), v.size()));
    }
    std::string scalar(float v) { return floats({}, {v}); }
    std::string shape(const std::vector<int64_t> &v) { return ints({int64_t(v.size())}, v); }

    // The layer's parameter (or state) tensor `suffix`, as an initializer.
    std::string param(const char *suffix) {
        for (const TensorSlot &t : layer().tensors)
            if (t.suffix == suffix) {
                const float *base = t.state ? state_ : params_;
                return initializer("layers." + std::to_string(layer_) + "." + suffix, kFloat, t.shape,
                                   float_bytes(base + t.offset, t.count));
            }
        fail(SNN_ERR_INTERNAL, "%s has no tensor %s", layer_label(net_, layer_).c_str(), suffix);
    }

    // ---- shared pieces ------------------------------------------------------------------

    std::string act(const std::string &x, Act a) {
        switch (a) {
            case Act::identity: return x;
            case Act::relu: return node("Relu", {x});
            case Act::leaky_relu: return node("LeakyRelu", {x}, {attr_float("alpha", kLeakySlope)});
            case Act::tanh: return node("Tanh", {x});
            case Act::sigmoid: return node("Sigmoid", {x});
            case Act::gelu: {
                // x Phi(x) = x * 0.5 * (1 + erf(x / sqrt 2)), snn's exact form
                const std::string e = node("Erf", {node("Div", {x, scalar(sqrtf(2.0f))})});
                return node("Mul", {node("Mul", {x, node("Add", {e, scalar(1.0f)})}), scalar(0.5f)});
            }
            case Act::silu: return node("Mul", {x, node("Sigmoid", {x})});
        }
        refuse("unknown activation");
    }

    // bool [batch, T]: step t < lengths[s].
    std::string valid() {
        if (valid_.empty()) {
            const int64_t steps = net_.input().h;
            std::vector<int32_t> step_ids;
            for (int64_t k = 0; k < steps; ++k) step_ids.push_back(int32_t(k));
            valid_ = node("Less", {int32s({steps}, step_ids), node("Unsqueeze", {"lengths", ints({1}, {1})})});
        }
        return valid_;
    }
    // bool [batch, T, 1]
    std::string valid_steps() { return node("Unsqueeze", {valid(), ints({1}, {2})}); }

    // Appends rows [from, from + n) of a row-major matrix of `cols` columns
    // (one gate's block, for the gate reordering).
    static void copy_rows(std::vector<float> &dst, const float *src, int64_t from, int64_t n, int64_t cols) {
        dst.insert(dst.end(), src + from * cols, src + (from + n) * cols);
    }

    // ---- the ops --------------------------------------------------------------------------

    std::string emit_layer(const Layer &l) {
        switch (l.kind) {
            case OpKind::input: refuse("an input node after the first");
            case OpKind::dense: return dense(l);
            case OpKind::conv: {
                std::vector<std::string> in = {input(0), param("weight")};
                if (l.bias) in.push_back(param("bias"));
                const std::string y = node("Conv", in,
                                           {attr_ints("kernel_shape", {l.kh, l.kw}), attr_ints("strides", {l.sh, l.sw}),
                                            attr_ints("pads", {l.ph, l.pw, l.ph, l.pw})});
                return act(y, l.act);
            }
            case OpKind::maxpool:
            case OpKind::avgpool:
                return node(l.kind == OpKind::maxpool ? "MaxPool" : "AveragePool", {input(0)},
                            {attr_ints("kernel_shape", {l.kh, l.kw}), attr_ints("strides", {l.sh, l.sw})});
            case OpKind::globalavgpool: return node("GlobalAveragePool", {input(0)});
            case OpKind::flatten:
                if (!l.in.is_image && !l.in.is_seq) return input(0);
                return node("Flatten", {input(0)}, {attr_int("axis", 1)});
            case OpKind::add: return node("Add", {input(0), input(1)});
            case OpKind::concat: return node("Concat", {input(0), input(1)}, {attr_int("axis", 1)});
            case OpKind::activation: return act(input(0), l.act);
            case OpKind::softmax: return node("Softmax", {input(0)}, {attr_int("axis", l.in.is_image ? 1 : -1)});
            case OpKind::batchnorm: return batchnorm(l);
            case OpKind::layernorm:
                return node("LayerNormalization", {input(0), param("weight"), param("bias")},
                            {attr_int("axis", l.in.is_image ? 1 : -1), attr_float("epsilon", float(l.eps))});
            // The identity in inference mode (no training_mode input); the
            // ratio keeps P for import.
            case OpKind::dropout: return node("Dropout", {input(0), scalar(float(l.p))});
            case OpKind::embedding: return node("Gather", {param("weight"), input(0)}, {attr_int("axis", 0)});
            case OpKind::posembed: return node("Add", {input(0), param("weight")});
            case OpKind::seqpool: return seqpool(l);
            case OpKind::conv1d: return conv1d(l);
            case OpKind::attention: return attention(l);
            case OpKind::lstm:
            case OpKind::gru: return recurrent(l);
        }
        refuse("an op export does not know");
    }

    std::string dense(const Layer &l) {
        const std::string x = input(0);
        if (!l.in.is_seq) {
            std::vector<std::string> in = {x, param("weight")};
            if (l.bias) in.push_back(param("bias"));
            return act(node("Gemm", in, {attr_int("transB", 1)}), l.act);
        }
        std::string y = linear(x, param("weight"));
        if (l.bias) y = node("Add", {y, param("bias")});
        return act(y, l.act);
    }

    // x W^T for a weight [out][in] on the last axis.
    std::string linear(const std::string &x, const std::string &w) {
        return node("MatMul", {x, node("Transpose", {w}, {attr_ints("perm", {1, 0})})});
    }

    std::string batchnorm(const Layer &l) {
        std::string x = input(0);
        const bool flat = l.in.is_seq;  // per value of the T x F of a sample
        if (flat) x = node("Flatten", {x}, {attr_int("axis", 1)});
        const std::string y =
            node("BatchNormalization",
                 {x, param("weight"), param("bias"), param("running_mean"), param("running_var")},
                 {attr_float("epsilon", float(l.eps)), attr_float("momentum", float(1.0 - l.momentum))});
        return flat ? node("Reshape", {y, shape({0, l.in.h, l.in.c})}) : y;
    }

    std::string seqpool(const Layer &l) {
        const std::string x = input(0);
        const int64_t steps = l.in.h;
        if (!options_.lengths) {
            switch (l.pool) {
                case SeqPool::last: return node("Gather", {x, ints({}, {steps - 1})}, {attr_int("axis", 1)});
                case SeqPool::mean:
                    return node("ReduceMean", {x}, {attr_ints("axes", {1}), attr_int("keepdims", 0)});
                case SeqPool::max:
                    return node("ReduceMax", {x}, {attr_ints("axes", {1}), attr_int("keepdims", 0)});
            }
        }
        switch (l.pool) {
            case SeqPool::last: {
                const std::string len = node("Unsqueeze", {"lengths", ints({1}, {1})});
                const std::string at = node("Sub", {len, int32s({}, {1})});
                const std::string idx = node("Cast", {at}, {attr_int("to", kInt64)});
                return node("GatherND", {x, idx}, {attr_int("batch_dims", 1)});
            }
            case SeqPool::mean: {
                const std::string kept = node("Where", {valid_steps(), x, scalar(0.0f)});
                const std::string sum = node("ReduceSum", {kept, ints({1}, {1})}, {attr_int("keepdims", 0)});
                const std::string len = node("Unsqueeze", {"lengths", ints({1}, {1})});
                return node("Div", {sum, node("Cast", {len}, {attr_int("to", kFloat)})});
            }
            case SeqPool::max: {
                const std::string kept = node("Where", {valid_steps(), x, scalar(-INFINITY)});
                return node("ReduceMax", {kept}, {attr_ints("axes", {1}), attr_int("keepdims", 0)});
            }
        }
        refuse("unknown pooling");
    }

    std::string conv1d(const Layer &l) {
        std::string x = input(0);
        // snn reads steps past a sample's length as zeros.
        if (options_.lengths) x = node("Where", {valid_steps(), x, scalar(0.0f)});
        const std::string xt = node("Transpose", {x}, {attr_ints("perm", {0, 2, 1})});
        std::vector<std::string> in = {xt, param("weight")};
        if (l.bias) in.push_back(param("bias"));
        const std::string y = node("Conv", in,
                                   {attr_ints("kernel_shape", {l.kh}), attr_ints("strides", {l.sh}),
                                    attr_ints("pads", {l.ph, l.ph}), attr_ints("dilations", {l.dilation})});
        return act(node("Transpose", {y}, {attr_ints("perm", {0, 2, 1})}), l.act);
    }

    std::string attention(const Layer &l) {
        const int64_t e = l.in.c, t = l.in.h, h = l.heads, d = e / h;
        const std::string qkv = node("Add", {linear(input(0), param("in_proj_weight")), param("in_proj_bias")});
        std::vector<std::string> parts;  // Q, K, V: thirds of the features
        for (int64_t k = 0; k < 3; ++k)
            parts.push_back(node("Slice", {qkv, ints({1}, {k * e}), ints({1}, {(k + 1) * e}), ints({1}, {2})}));
        const std::string heads_shape = shape({0, t, h, d});
        auto heads = [&](const std::string &v, std::vector<int64_t> perm) {
            return node("Transpose", {node("Reshape", {v, heads_shape})}, {attr_ints("perm", std::move(perm))});
        };
        const std::string q = heads(parts[0], {0, 2, 1, 3});  // [batch, H, T, d]
        const std::string kt = heads(parts[1], {0, 2, 3, 1}); // [batch, H, d, T]
        const std::string v = heads(parts[2], {0, 2, 1, 3});
        std::string s = node("Mul", {node("MatMul", {q, kt}), scalar(float(1.0 / sqrt(double(d))))});
        if (l.causal) {
            std::vector<float> mask(size_t(t * t), 0.0f);
            for (int64_t i = 0; i < t; ++i)
                for (int64_t j = i + 1; j < t; ++j) mask[size_t(i * t + j)] = -INFINITY;
            s = node("Add", {s, floats({t, t}, mask)});
        }
        if (options_.lengths) {
            const std::string keys = node("Unsqueeze", {valid(), ints({2}, {1, 2})});  // [batch, 1, 1, T]
            s = node("Add", {s, node("Where", {keys, scalar(0.0f), scalar(-INFINITY)})});
        }
        const std::string p = node("Softmax", {s}, {attr_int("axis", -1)});
        const std::string c = node("Transpose", {node("MatMul", {p, v})}, {attr_ints("perm", {0, 2, 1, 3})});
        const std::string joined = node("Reshape", {c, shape({0, t, e})});
        return node("Add", {linear(joined, param("out_proj.weight")), param("out_proj.bias")});
    }

    // ONNX's W [dirs][G H][F], R [dirs][G H][H], B [dirs][2 G H] from
    // PyTorch's tensors, gates reordered: lstm i f g o -> i o f c, gru
    // r z n -> z r h.
    std::string recurrent(const Layer &l) {
        const bool lstm = l.kind == OpKind::lstm;
        const int64_t f = l.in.c, hid = l.units, steps = l.in.h, dirs = l.bidirectional ? 2 : 1;
        const std::vector<int64_t> order = lstm ? std::vector<int64_t>{0, 3, 1, 2} : std::vector<int64_t>{1, 0, 2};
        const int64_t g = int64_t(order.size());
        std::vector<float> w, r, b;
        for (int64_t dir = 0; dir < dirs; ++dir) {
            const std::string sfx = dir ? "_l0_reverse" : "_l0";
            const float *w_ih = slot("weight_ih" + sfx), *w_hh = slot("weight_hh" + sfx);
            for (int64_t gate : order) copy_rows(w, w_ih, gate * hid, hid, f);
            for (int64_t gate : order) copy_rows(r, w_hh, gate * hid, hid, hid);
            if (!l.bias) continue;
            const float *b_ih = slot("bias_ih" + sfx), *b_hh = slot("bias_hh" + sfx);
            for (int64_t gate : order) copy_rows(b, b_ih, gate * hid, hid, 1);
            for (int64_t gate : order) copy_rows(b, b_hh, gate * hid, hid, 1);
        }
        const std::string base = "layers." + std::to_string(layer_) + ".";
        std::vector<std::string> in = {node("Transpose", {input(0)}, {attr_ints("perm", {1, 0, 2})}),
                                       initializer(base + "W", kFloat, {dirs, g * hid, f}, float_bytes(w.data(), w.size())),
                                       initializer(base + "R", kFloat, {dirs, g * hid, hid}, float_bytes(r.data(), r.size())),
                                       l.bias ? initializer(base + "B", kFloat, {dirs, 2 * g * hid},
                                                            float_bytes(b.data(), b.size()))
                                              : std::string()};
        if (options_.lengths) in.push_back("lengths");
        while (!in.empty() && in.back().empty()) in.pop_back();
        std::vector<Attribute> attrs = {attr_int("hidden_size", hid),
                                        attr_string("direction", l.bidirectional ? "bidirectional" : "forward")};
        if (!lstm) attrs.push_back(attr_int("linear_before_reset", 1));
        const std::vector<std::string> outs =
            node_outputs(lstm ? "LSTM" : "GRU", in, {!l.last, l.last}, std::move(attrs));
        if (l.last) {
            const std::string hn = node("Transpose", {outs[1]}, {attr_ints("perm", {1, 0, 2})});
            return node("Reshape", {hn, shape({0, dirs * hid})});
        }
        const std::string y = node("Transpose", {outs[0]}, {attr_ints("perm", {2, 0, 1, 3})});
        return node("Reshape", {y, shape({0, steps, dirs * hid})});
    }

    const float *slot(const std::string &suffix) const {
        for (const TensorSlot &t : layer().tensors)
            if (t.suffix == suffix) return params_ + t.offset;
        fail(SNN_ERR_INTERNAL, "%s has no tensor %s", layer_label(net_, layer_).c_str(), suffix.c_str());
    }
};

}  // namespace

std::string export_model(const Network &net, const float *params, const float *state, const ExportOptions &options) {
    return Exporter(net, params, state, options).run();
}

}  // namespace onnx
}  // namespace snn
