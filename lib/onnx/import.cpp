// ONNX import: an ONNX graph (what torch.onnx.export writes, opsets 13 to 21)
// mapped onto snn's ops. The steps:
//
//   1. read (proto.h), refuse what snn never represents (external data,
//      subgraphs, sparse initializers, several inputs or outputs);
//   2. a value graph: every value's producer and consumers, checked (each
//      name defined once, every input defined, no cycle) and sorted;
//   3. shapes and constants: every value's shape, its dimensions written
//      a * batch + b (the batch may be symbolic), and every value computed
//      from initializers and shapes alone folded into a constant (the
//      Shape-Gather-Unsqueeze-Concat of x.view(x.size(0), -1), LSTM's weight
//      reordering without constant folding, a causal mask built from the
//      input's length); the values computed from a second input "lengths"
//      alone marked, in the forms snn's export writes (LenKind);
//   4. mapping, in graph order from the input: each node, or group of
//      nodes (Gemm, MatMul + Add, Div-Erf-Add-Mul-Mul, Sigmoid-Mul, the
//      decomposed layer norm, the region of an attention's Softmax), gives
//      snn layers. A value that only moves axes (Transpose, Reshape,
//      Squeeze, Flatten...) stays a view of the layer it came from: its
//      axes as atoms of that layer's canonical axes ([batch][features],
//      [batch][C][H][W], [batch][T][F]), so that a layer that needs its
//      input in snn's layout checks it exactly;
//   5. the spec, printed with name= and from= where the graph branches,
//      checked by parse_spec against the parameters and state given, in
//      snn's (PyTorch's) layout.
//
// Every node that cannot be mapped is named in one SNN_ERR_UNSUPPORTED
// message, one line each.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "ops/spec_text.h"
#include "onnx/onnx.h"
#include "onnx/proto.h"

namespace snn {
namespace onnx {
namespace {

// ---- dimensions: a * batch + b --------------------------------------------

struct Sym {
    int64_t a = 0, b = 0;
    bool known = true;
    bool operator==(const Sym &o) const { return known && o.known && a == o.a && b == o.b; }
    bool operator!=(const Sym &o) const { return !(*this == o); }
    bool concrete() const { return known && a == 0; }
};
Sym num(int64_t v) { return {0, v, true}; }
Sym unknown_sym() { return {0, 0, false}; }
// Arithmetic on sizes; a result beyond int64 is not known.
Sym sym_add(Sym x, Sym y) {
    Sym r;
    if (!x.known || !y.known || __builtin_add_overflow(x.a, y.a, &r.a) || __builtin_add_overflow(x.b, y.b, &r.b))
        return unknown_sym();
    return r;
}
Sym sym_sub(Sym x, Sym y) {
    Sym r;
    if (!x.known || !y.known || __builtin_sub_overflow(x.a, y.a, &r.a) || __builtin_sub_overflow(x.b, y.b, &r.b))
        return unknown_sym();
    return r;
}
Sym sym_mul(Sym x, Sym y) {
    if (!x.known || !y.known || (x.a && y.a)) return unknown_sym();
    Sym r;
    int64_t p, q;
    if (__builtin_mul_overflow(x.a, y.b, &p) || __builtin_mul_overflow(y.a, x.b, &q) ||
        __builtin_add_overflow(p, q, &r.a) || __builtin_mul_overflow(x.b, y.b, &r.b))
        return unknown_sym();
    return r;
}
Sym sym_div(Sym x, Sym y) {
    if (!x.known || !y.concrete() || y.b == 0) return unknown_sym();
    if (y.b == -1 && (x.a == INT64_MIN || x.b == INT64_MIN)) return unknown_sym();
    if (x.a % y.b || (x.a && x.b % y.b)) return x.a ? unknown_sym() : num(x.b / y.b);
    return {x.a / y.b, x.b / y.b, true};
}

using Dims = std::vector<Sym>;

std::string sym_text(Sym s) {
    if (!s.known) return "?";
    if (s.a == 0) return format("%lld", (long long)s.b);
    std::string t = s.a == 1 ? "batch" : format("%lld*batch", (long long)s.a);
    if (s.b) t += format("%+lld", (long long)s.b);
    return t;
}
std::string dims_text(const Dims &d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + sym_text(d[i]);
    return s + "]";
}
std::string ints_text(const std::vector<int64_t> &d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) s += format("%s%lld", i ? ", " : "", (long long)d[i]);
    return s + "]";
}

// ---- folded constants ------------------------------------------------------

struct Const {
    bool is_int = false;          // int64 / int32 / bool values (shape arithmetic), else floats as doubles
    std::vector<int64_t> dims;
    std::vector<double> f;
    std::vector<Sym> i;
    // The number of values the dims hold; INT64_MAX for a negative
    // dimension or a product beyond int64.
    int64_t count() const {
        for (int64_t d : dims)
            if (d == 0) return 0;
        int64_t n = 1;
        for (int64_t d : dims)
            if (d < 0 || __builtin_mul_overflow(n, d, &n)) return INT64_MAX;
        return n;
    }
    double at(int64_t k) const { return is_int ? double(i[size_t(k)].b) : f[size_t(k)]; }
    // Value k as an integer (floats clamped to the int64 range).
    int64_t int_at(int64_t k) const {
        if (is_int) return i[size_t(k)].b;
        const double v = f[size_t(k)];
        return v != v ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : int64_t(v);
    }
    bool all_concrete() const {
        for (const Sym &s : i)
            if (!s.concrete()) return false;
        return true;
    }
};
using ConstPtr = std::shared_ptr<const Const>;

// A node that cannot be mapped: the reason, collected with the others.
struct Refusal {
    std::string why;
};

[[noreturn]] void refuse(const std::string &why) { throw Refusal{why}; }

bool is_int_type(int32_t t) {
    return t == kInt32 || t == kInt64 || t == kInt8 || t == kUint8 || t == kBool;
}

ConstPtr const_of_tensor(const Tensor &t) {
    if (t.external) fail(SNN_ERR_UNSUPPORTED, "tensor '%s' keeps its data in an external file, which snn does not read",
                         t.name.c_str());
    auto c = std::make_shared<Const>();
    c->dims = t.dims;
    for (int64_t d : t.dims)
        if (d < 0) fail(SNN_ERR_FILE_FORMAT, "tensor '%s' has a negative dimension", t.name.c_str());
    if (is_int_type(t.data_type)) {
        c->is_int = true;
        for (int64_t v : t.to_int64s()) c->i.push_back(num(v));
    } else {
        for (float v : t.to_floats()) c->f.push_back(v);
    }
    if (int64_t(c->is_int ? c->i.size() : c->f.size()) != c->count())
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s' holds %zu values for dimensions %s", t.name.c_str(),
             c->is_int ? c->i.size() : c->f.size(), ints_text(t.dims).c_str());
    return c;
}

// x * y of two sizes, refused beyond int64.
int64_t size_mul(int64_t x, int64_t y) {
    int64_t r;
    if (__builtin_mul_overflow(x, y, &r)) refuse("a value of more elements than int64 counts");
    return r;
}

// Strides of row-major dims.
std::vector<int64_t> strides_of(const std::vector<int64_t> &dims) {
    std::vector<int64_t> s(dims.size(), 1);
    for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
    return s;
}

// numpy broadcasting of two shapes; false when they do not broadcast.
bool broadcast_dims(const Dims &x, const Dims &y, Dims *out) {
    const size_t r = std::max(x.size(), y.size());
    out->assign(r, num(1));
    for (size_t k = 0; k < r; ++k) {
        const Sym a = k < r - x.size() ? num(1) : x[k - (r - x.size())];
        const Sym b = k < r - y.size() ? num(1) : y[k - (r - y.size())];
        if (a == num(1)) (*out)[k] = b;
        else if (b == num(1) || a == b) (*out)[k] = a;
        else if (!a.known || !b.known) (*out)[k] = unknown_sym();
        else return false;
    }
    return true;
}

// Whether perm holds each of 0 .. rank-1 once.
bool is_permutation_of(const std::vector<int64_t> &perm, size_t rank) {
    if (perm.size() != rank) return false;
    std::vector<bool> seen(rank, false);
    for (int64_t p : perm) {
        if (p < 0 || p >= int64_t(rank) || seen[size_t(p)]) return false;
        seen[size_t(p)] = true;
    }
    return true;
}

Dims dims_of(const std::vector<int64_t> &d) {
    Dims s;
    for (int64_t v : d) s.push_back(num(v));
    return s;
}

// The most values a folded constant may hold.
const int64_t kMaxFolded = int64_t(1) << 24;

// Element-wise binary op on constants, with broadcasting.
ConstPtr fold_binary(const std::string &op, const Const &x, const Const &y) {
    Dims bd;
    if (!broadcast_dims(dims_of(x.dims), dims_of(y.dims), &bd)) refuse("operands do not broadcast");
    auto c = std::make_shared<Const>();
    for (const Sym &s : bd) c->dims.push_back(s.b);
    const bool ints = x.is_int && y.is_int;
    const bool compare = op == "Equal" || op == "Less" || op == "Greater";
    c->is_int = ints || compare;
    const int64_t n = c->count();
    if (n > kMaxFolded) refuse("the folded value would hold more than 2^24 values");
    const auto xs = strides_of(x.dims), ys = strides_of(y.dims), cs = strides_of(c->dims);
    const size_t r = c->dims.size();
    for (int64_t k = 0; k < n; ++k) {
        int64_t xi = 0, yi = 0;
        for (size_t d = 0; d < r; ++d) {
            const int64_t idx = (k / cs[d]) % c->dims[d];
            const size_t dx = d + x.dims.size() - r, dy = d + y.dims.size() - r;
            if (d >= r - x.dims.size() && x.dims[dx] != 1) xi += idx * xs[dx];
            if (d >= r - y.dims.size() && y.dims[dy] != 1) yi += idx * ys[dy];
        }
        if (ints) {
            const Sym a = x.i[size_t(xi)], b = y.i[size_t(yi)];
            Sym v;
            if (op == "Add") v = sym_add(a, b);
            else if (op == "Sub") v = sym_sub(a, b);
            else if (op == "Mul") v = sym_mul(a, b);
            else if (op == "Div") v = sym_div(a, b);
            else if (op == "Mod" && a.concrete() && b.concrete() && b.b != 0) {
                // the sign of the divisor, as ONNX's integer Mod (fmod=0)
                int64_t m = b.b == -1 ? 0 : a.b % b.b;
                if (m != 0 && (m < 0) != (b.b < 0)) m += b.b;
                v = num(m);
            }
            else if (op == "Max" && a.concrete() && b.concrete()) v = num(std::max(a.b, b.b));
            else if (op == "Min" && a.concrete() && b.concrete()) v = num(std::min(a.b, b.b));
            else if (compare && a.concrete() && b.concrete())
                v = num(op == "Equal" ? a.b == b.b : op == "Less" ? a.b < b.b : a.b > b.b);
            else v = unknown_sym();
            c->i.push_back(v);
        } else {
            const double a = x.at(xi), b = y.at(yi);
            if (compare) {
                c->i.push_back(num(op == "Equal" ? a == b : op == "Less" ? a < b : a > b));
                continue;
            }
            double v;
            if (op == "Add") v = a + b;
            else if (op == "Sub") v = a - b;
            else if (op == "Mul") v = a * b;
            else if (op == "Div") v = a / b;
            else if (op == "Pow") v = pow(a, b);
            else if (op == "Max") v = std::max(a, b);
            else if (op == "Min") v = std::min(a, b);
            else refuse("cannot fold " + op);
            c->f.push_back(double(float(v)));
        }
    }
    return c;
}

// ---- the graph ---------------------------------------------------------------

// A value's place in snn: axes of one layer's output (see the top).
struct View {
    int layer = -1;
    std::vector<std::vector<int>> dims;  // per ONNX axis, its atoms (none: an axis of 1)
    // The layer's output with each sample's padded steps (those at or past
    // its length) replaced: by 0 (kPadZero) or by -inf (kPadMinusInf).
    int padded = 0;
};
enum { kPadNone = 0, kPadZero, kPadMinusInf };

// Values computed from the graph input "lengths" alone, in the forms snn's
// export writes (len: lengths [batch]; t: the step index; T: the input's
// steps). Any other use of "lengths" is refused.
enum LenKind {
    kNotLen = 0,
    kLen,         // lengths itself, [batch]
    kLenCol,      // Unsqueeze(lengths, 1): [batch, 1]
    kLenLast,     // len - 1 (then Cast to an integer type): [batch, 1]
    kLenFloat,    // Cast(len column, float): [batch, 1]
    kValid,       // Less(0..T-1, len column): t < len, [batch, T]
    kValidSteps,  // Unsqueeze(valid, 2): [batch, T, 1]
    kValidKeys,   // Unsqueeze(valid, [1, 2]): [batch, 1, 1, T]
    kKeyMask,     // Where(valid keys, 0, -inf): [batch, 1, 1, T]
};

struct Value {
    std::string name;
    int producer = -1;                 // node index; -1 for initializers and graph inputs
    std::vector<int> consumers;
    bool graph_output = false;
    bool has_shape = false;
    Dims shape;
    bool is_int = false;               // its element type is an integer type
    ConstPtr c;                        // folded
    bool zeros = false;                // known to be all zeros (ConstantOfShape 0 of a batch-sized shape)
    int len = kNotLen;                 // computed from "lengths" alone (LenKind)
    bool mapped = false;
    View view;
};

// An snn layer being built.
struct Out {
    std::string text;                  // "dense 16", "conv 3x3 4 pad=1", ... (without act, name, from)
    bool fusable = false;              // dense, conv, conv1d: takes an activation
    bool zero_padded = false;          // 0 at each sample's padded steps (lstm/gru given sequence_lens)
    Act act = Act::identity;
    bool nobias = false;
    int input = -1, other = -1;        // the layers read (other: add, concat)
    std::vector<float> params, state;
    std::vector<std::vector<int>> canon;  // canonical axes (atoms)
    int primary = -1;                  // the ONNX value that is this layer's output as it is
    int source = -1;                   // snn's layer index in the producing node's name (snn's export), or -1
    bool named = false;
    enum Kind { vector, image, seq, tokens } kind = vector;
};

// The snn layer a node came from when snn's export wrote the file (its
// nodes are named "layers.<i>.<op>..."), else -1.
int snn_layer_of(const std::string &name) {
    if (name.compare(0, 7, "layers.") != 0) return -1;
    int64_t v = 0;
    size_t k = 7;
    for (; k < name.size() && name[k] >= '0' && name[k] <= '9' && v < (int64_t(1) << 30); ++k) v = v * 10 + (name[k] - '0');
    return k > 7 && k < name.size() && name[k] == '.' ? int(v) : -1;
}

const char *const kActOps[][2] = {{"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}};

const char *const kLengthsUses =
    "reads the 'lengths' input outside the forms snn maps (LSTM/GRU sequence_lens = lengths; attention's key "
    "mask Where(step < length, 0, -inf) added to the scores; seqpool last as GatherND of step length-1, mean as "
    "ReduceSum of the valid steps / length, max as ReduceMax with padded steps -inf; conv1d's input with padded "
    "steps zeroed)";

class Importer {
public:
    Importer(const Model &m, const ImportOptions &o) : m_(m), g_(m.graph), opt_(o) {}
    Imported run();

private:
    const Model &m_;
    const Graph &g_;
    ImportOptions opt_;
    std::vector<Value> values_;
    std::map<std::string, int> ids_;
    std::vector<int> order_;           // nodes in a topological order
    std::vector<bool> live_;           // the node contributes to the output
    std::vector<bool> done_;           // mapped (as part of a group)
    std::vector<std::string> problems_;
    // A deque: a reference to a layer stays valid while later ones are emitted.
    std::deque<Out> outs_;
    std::vector<int64_t> atom_size_;   // -1: the batch (atom 0)
    std::vector<std::vector<int>> atom_split_;
    Sym batch_ = {1, 0, true};
    int input_value_ = -1, lengths_value_ = -1, output_value_ = -1;
    int64_t steps_ = 0;                // the input's steps (sequences and token ids)
    int64_t vocab_ = 0;
    int64_t opset_ = 0;

    // -- helpers
    int id(const std::string &name) const {
        auto it = ids_.find(name);
        return it == ids_.end() ? -1 : it->second;
    }
    // The value named `name`; a name nothing defines (an input a node lacks
    // included: "") is a broken file.
    Value &val(const std::string &name) {
        auto it = ids_.find(name);
        if (it == ids_.end()) {
            if (name.empty()) fail(SNN_ERR_FILE_FORMAT, "ONNX: a node lacks an input its op requires");
            fail(SNN_ERR_FILE_FORMAT, "ONNX: value '%s' is read but nothing defines it", name.c_str());
        }
        return values_[size_t(it->second)];
    }
    const Node &node(int k) const { return g_.node[size_t(k)]; }
    std::string where(const Node &n) const { return n.op_type + " '" + n.name + "'"; }
    // The input k of n ("" when absent).
    const std::string &in(const Node &n, size_t k) const {
        static const std::string none;
        return k < n.input.size() ? n.input[k] : none;
    }
    bool has_in(const Node &n, size_t k) const { return k < n.input.size() && !n.input[k].empty(); }
    ConstPtr cin(const Node &n, size_t k) { return has_in(n, k) ? val(n.input[k]).c : nullptr; }
    int64_t attr_i(const Node &n, const char *name, int64_t dflt) const {
        const Attribute *a = n.attr(name);
        return a ? a->i : dflt;
    }
    double attr_f(const Node &n, const char *name, double dflt) const {
        const Attribute *a = n.attr(name);
        return a ? double(a->f) : dflt;
    }
    std::vector<int64_t> attr_ints(const Node &n, const char *name) const {
        const Attribute *a = n.attr(name);
        return a ? a->ints : std::vector<int64_t>();
    }
    std::string attr_s(const Node &n, const char *name, const char *dflt) const {
        const Attribute *a = n.attr(name);
        return a ? a->s : dflt;
    }

    void build_graph();
    void sort_nodes();
    void fold_and_shape(int k);
    bool fold(const Node &n);
    bool derive_lengths(const Node &n);
    // With a 'lengths' input, snn applies them at run time to every sequence
    // layer (recurrent layers, attention, seqpool, conv1d), so a layer whose
    // ONNX form does not read them would compute something else. Lengths
    // change nothing only when the input has one step (every length is 1).
    void refuse_ignoring_lengths(const std::string &what, const std::string &effect) const {
        if (lengths_value_ >= 0 && steps_ > 1)
            refuse(what + " ignores 'lengths', which snn applies to every sequence layer (" + effect + ")");
    }
    bool reads_lengths(const Node &n) {
        for (const std::string &i : n.input)
            if (!i.empty() && val(i).len != kNotLen) return true;
        return false;
    }
    void infer_shape(const Node &n);
    void map_nodes();
    void map_node(int k);
    Imported finish();
    void restore_from_metadata(const Network &from_graph, Imported &imp);

    // views and layers
    int new_atom(int64_t size) {
        atom_size_.push_back(size);
        atom_split_.emplace_back();
        return int(atom_size_.size()) - 1;
    }
    void leaves(int atom, std::vector<int> *out) const {
        if (atom_split_[size_t(atom)].empty()) out->push_back(atom);
        else
            for (int c : atom_split_[size_t(atom)]) leaves(c, out);
    }
    std::vector<int> leaves_of(const std::vector<int> &dim) const {
        std::vector<int> out;
        for (int a : dim) leaves(a, &out);
        return out;
    }
    bool same_dims(const std::vector<std::vector<int>> &x, const std::vector<std::vector<int>> &y) const {
        if (x.size() != y.size()) return false;
        for (size_t k = 0; k < x.size(); ++k)
            if (leaves_of(x[k]) != leaves_of(y[k])) return false;
        return true;
    }
    Sym atom_sym(int atom) const { return atom == 0 ? batch_ : num(atom_size_[size_t(atom)]); }
    std::vector<int> atoms_for(int64_t size) { return size == 1 ? std::vector<int>{} : std::vector<int>{new_atom(size)}; }
    int emit(Out o);
    View canonical_view(int layer) const { return View{layer, outs_[size_t(layer)].canon}; }
    const View &view_of(const std::string &name);
    const View &padded_view_of(const std::string &name);
    int materialize(const View &v, Out::Kind want, const char *what);
    bool is_canonical(const View &v) const { return same_dims(v.dims, outs_[size_t(v.layer)].canon); }
    void set_view(const std::string &name, const View &v) {
        Value &x = val(name);
        // The ops read a value's axes from its shape and from its view alike.
        if (x.has_shape && x.shape.size() != v.dims.size())
            refuse(format("'%s' has %zu axes by its shape and %zu as snn maps it", name.c_str(), x.shape.size(),
                          v.dims.size()));
        x.view = v;
        x.mapped = true;
    }
    std::vector<std::vector<int>> canon_for(Out::Kind kind, const Dims &shape, int feature_layer_atoms = -1);
    bool fuse_activation(const View &v, Act act, const std::vector<int> &group, const std::string &out_name);
    void activation(const Node &n, Act act, const std::vector<int> &group, const std::string &x,
                    const std::string &out_name);
    const Dims &shape(const std::string &name) {
        const Value &v = val(name);
        if (!v.has_shape) refuse("the shape of '" + name + "' is not known");
        return v.shape;
    }
    int64_t concrete(Sym s, const char *what) {
        if (!s.concrete()) refuse(std::string(what) + " depends on the batch");
        return s.b;
    }
    std::vector<float> floats(const std::string &name, const char *what) {
        const Value &v = val(name);
        if (!v.c) refuse(std::string(what) + " '" + name + "' is computed, not a constant");
        std::vector<float> out;
        for (int64_t k = 0; k < v.c->count(); ++k) out.push_back(float(v.c->at(k)));
        return out;
    }
    std::vector<int64_t> const_ints(const std::string &name, const char *what) {
        const Value &v = val(name);
        if (!v.c) refuse(std::string(what) + " '" + name + "' is not a constant");
        std::vector<int64_t> out;
        for (int64_t k = 0; k < v.c->count(); ++k) {
            if (v.c->is_int && !v.c->i[size_t(k)].concrete()) refuse(std::string(what) + " depends on the batch");
            out.push_back(v.c->int_at(k));
        }
        return out;
    }
    std::vector<int64_t> const_dims(const std::string &name) {
        const Value &v = val(name);
        if (!v.c) refuse("'" + name + "' is not a constant");
        return v.c->dims;
    }
    // A node whose outputs are all folded (Shape of a layer's output, ...):
    // it reads a value's shape, not its values.
    bool folded_node(int k) {
        for (const std::string &o : node(k).output)
            if (!o.empty() && !val(o).c && !val(o).zeros) return false;
        return true;
    }
    // The only consumer of value `name` that reads its values, or -1.
    int sole_consumer(const std::string &name) {
        const Value &v = val(name);
        if (v.graph_output) return -1;
        int found = -1;
        for (int c : v.consumers) {
            if (folded_node(c)) continue;
            if (found >= 0 && found != c) return -1;
            found = c;
        }
        return found;
    }
    bool consumers_within(const std::string &name, const std::vector<int> &group) {
        const Value &v = val(name);
        if (v.graph_output) return false;
        for (int c : v.consumers)
            if (!folded_node(c) && std::find(group.begin(), group.end(), c) == group.end()) return false;
        return true;
    }
    // Scalar value of a constant input, or NaN.
    double scalar(const std::string &name) {
        const int i = id(name);
        if (i < 0 || !values_[size_t(i)].c || values_[size_t(i)].c->count() != 1) return NAN;
        return values_[size_t(i)].c->at(0);
    }
    // The other input of a binary node n than `x`, or "".
    std::string other_input(const Node &n, const std::string &x) {
        if (n.input.size() != 2) return "";
        if (n.input[0] == x) return n.input[1];
        if (n.input[1] == x) return n.input[0];
        return "";
    }
    int64_t norm_axis(int64_t axis, size_t rank) {
        if (axis < -int64_t(rank) || axis >= int64_t(rank)) refuse(format("axis %lld is out of range", (long long)axis));
        return axis < 0 ? axis + int64_t(rank) : axis;
    }
    std::vector<int64_t> axes_of(const Node &n, size_t input_index, size_t rank) {
        std::vector<int64_t> axes = attr_ints(n, "axes");
        if (has_in(n, input_index)) axes = const_ints(in(n, input_index), "axes");
        for (int64_t &a : axes) a = norm_axis(a, rank);
        std::sort(axes.begin(), axes.end());
        return axes;
    }

    // the ops
    void map_dense_gemm(const Node &n, int k);
    void map_matmul(const Node &n, int k);
    void map_conv(const Node &n);
    void map_pool(const Node &n);
    void map_batchnorm(const Node &n);
    void map_layernorm(const Node &n);
    bool map_layernorm_decomposed(const Node &n, int k);
    void map_reduce(const Node &n, int k);
    void map_reduce_valid(const Node &n, const View &v);
    void map_add(const Node &n);
    void map_concat(const Node &n);
    void map_gather(const Node &n);
    void map_slice(const Node &n);
    void map_layout(const Node &n);
    void map_recurrent(const Node &n, bool lstm);
    void map_softmax(const Node &n);
    bool map_gelu(const Node &n, int k);
    void map_dropout(const Node &n);
    void map_where(const Node &n);
    void map_gather_nd(const Node &n);
    View reshape_view(const View &v, const Dims &target);
    int seqpool_last(const View &v, int axis, bool keep);

    // attention
    struct Region;
    std::vector<std::unique_ptr<Region>> regions_;
    std::vector<int> region_of_;
    void find_attention();
    bool match_attention(int softmax, Region *r, std::string *why);
    void map_attention(Region &r);
};

// ---- 1 and 2: the value graph ------------------------------------------------

void Importer::build_graph() {
    opset_ = m_.opset();
    if (opset_ == 0) opset_ = 13;
    auto define = [&](const std::string &name, int producer) -> Value & {
        if (name.empty()) fail(SNN_ERR_FILE_FORMAT, "a value has an empty name");
        if (ids_.count(name))
            fail(SNN_ERR_FILE_FORMAT, "the value '%s' is defined twice (each name must be assigned once)",
                 name.c_str());
        ids_[name] = int(values_.size());
        values_.emplace_back();
        values_.back().name = name;
        values_.back().producer = producer;
        return values_.back();
    };
    if (g_.sparse_initializer_count > 0)
        fail(SNN_ERR_UNSUPPORTED, "the graph has %lld sparse initializers, which snn does not read",
             (long long)g_.sparse_initializer_count);
    for (const Tensor &t : g_.initializer) {
        if (t.external)
            fail(SNN_ERR_UNSUPPORTED,
                 "initializer '%s' keeps its data in an external file (external data), which snn does not read; "
                 "save the model with its weights inside the file",
                 t.name.c_str());
        Value &v = define(t.name, -1);
        v.c = const_of_tensor(t);
        v.is_int = v.c->is_int;
        v.has_shape = true;
        v.shape = dims_of(v.c->dims);
    }
    // Graph inputs: an initializer may be listed as an input too (IR < 4).
    std::vector<const ValueInfo *> inputs;
    for (const ValueInfo &vi : g_.input)
        if (!ids_.count(vi.name)) inputs.push_back(&vi);
    // A second input "lengths" (int [batch]): the recurrent layers'
    // sequence_lens, and the masks of the padded steps snn's export writes
    // (attention, seqpool, conv1d); snn takes them at run time
    // (snn_set_lengths), not in the spec.
    std::vector<const ValueInfo *> data;
    const ValueInfo *lengths = nullptr;
    for (const ValueInfo *vi : inputs) {
        if (vi->name == "lengths" && inputs.size() == 2 && vi->has_shape && vi->shape.size() == 1 &&
            is_int_type(vi->elem_type))
            lengths = vi;
        else
            data.push_back(vi);
    }
    if (data.size() != 1) {
        std::string names;
        for (const ValueInfo *vi : inputs) names += (names.empty() ? "'" : ", '") + vi->name + "'";
        fail(SNN_ERR_UNSUPPORTED, "the graph has %zu inputs (%s); snn models take one input (and optionally "
             "'lengths')", inputs.size(), names.c_str());
    }
    if (g_.output.size() != 1) {
        std::string names;
        for (const ValueInfo &vi : g_.output) names += (names.empty() ? "'" : ", '") + vi.name + "'";
        fail(SNN_ERR_UNSUPPORTED, "the graph has %zu outputs (%s); snn models have one output", g_.output.size(),
             names.c_str());
    }
    for (const ValueInfo *vi : inputs) {
        Value &v = define(vi->name, -1);
        v.is_int = is_int_type(vi->elem_type);
        if (vi == lengths) lengths_value_ = ids_[vi->name];
    }
    input_value_ = ids_[data[0]->name];
    // Nodes: every output defined once; subgraphs refused with the node.
    for (size_t k = 0; k < g_.node.size(); ++k)
        for (const std::string &o : g_.node[k].output)
            if (!o.empty()) define(o, int(k));
    for (size_t k = 0; k < g_.node.size(); ++k) {
        const Node &n = g_.node[k];
        for (const std::string &i : n.input) {
            if (i.empty()) continue;
            const int v = id(i);
            if (v < 0)
                fail(SNN_ERR_FILE_FORMAT, "%s reads '%s', which no node, initializer or input defines",
                     where(n).c_str(), i.c_str());
            values_[size_t(v)].consumers.push_back(int(k));
        }
    }
    const int out = id(g_.output[0].name);
    if (out < 0)
        fail(SNN_ERR_FILE_FORMAT, "the graph output '%s' is defined by no node, initializer or input",
             g_.output[0].name.c_str());
    output_value_ = out;
    values_[size_t(out)].graph_output = true;
}

void Importer::sort_nodes() {
    const size_t n = g_.node.size();
    std::vector<int> pending(n, 0);
    std::vector<std::vector<int>> next(n);
    for (size_t k = 0; k < n; ++k)
        for (const std::string &i : g_.node[k].input) {
            if (i.empty()) continue;
            const int p = values_[size_t(id(i))].producer;
            if (p >= 0) {
                ++pending[k];
                next[size_t(p)].push_back(int(k));
            }
        }
    std::vector<int> ready;
    for (size_t k = n; k-- > 0;)
        if (pending[k] == 0) ready.push_back(int(k));
    while (!ready.empty()) {
        const int k = ready.back();
        ready.pop_back();
        order_.push_back(k);
        for (auto it = next[size_t(k)].rbegin(); it != next[size_t(k)].rend(); ++it)
            if (--pending[size_t(*it)] == 0) ready.push_back(*it);
    }
    if (order_.size() != n) {
        for (size_t k = 0; k < n; ++k)
            if (pending[k] > 0)
                fail(SNN_ERR_FILE_FORMAT, "the graph has a cycle through %s", where(g_.node[k]).c_str());
    }
    // Live nodes: those the output depends on.
    live_.assign(n, false);
    std::vector<int> stack{output_value_};
    std::vector<bool> seen(values_.size(), false);
    while (!stack.empty()) {
        const int v = stack.back();
        stack.pop_back();
        if (seen[size_t(v)]) continue;
        seen[size_t(v)] = true;
        const int p = values_[size_t(v)].producer;
        if (p < 0 || live_[size_t(p)]) continue;
        live_[size_t(p)] = true;
        for (const std::string &i : g_.node[size_t(p)].input)
            if (!i.empty()) stack.push_back(id(i));
    }
}

// ---- 3: shapes and constants ---------------------------------------------------

void Importer::fold_and_shape(int k) {
    const Node &n = node(k);
    for (const Attribute &a : n.attribute)
        if (a.has_graph) return;  // refused when mapped
    bool folded = false;
    try {
        if (derive_lengths(n)) return;
    } catch (const Refusal &) {
    }
    try {
        folded = fold(n);
    } catch (const Refusal &) {
        folded = false;
    }
    if (folded) return;
    try {
        infer_shape(n);
    } catch (const Refusal &) {
    }
}

// Node n computes a value from "lengths" in one of the forms snn's export
// writes (LenKind): marks it. Every other node that reads such a value is
// mapped as a layer that reads it (LSTM/GRU, the masks' Where, GatherND,
// the attention's Add, seqpool mean's Div), or refused.
bool Importer::derive_lengths(const Node &n) {
    if (lengths_value_ < 0 || !reads_lengths(n) || n.output.size() != 1 || n.output[0].empty()) return false;
    if (!n.domain.empty() && n.domain != "ai.onnx") return false;
    const std::string &op = n.op_type;
    auto kind = [&](size_t k) { return has_in(n, k) ? val(in(n, k)).len : int(kNotLen); };
    const Sym b = batch_, t = num(steps_);
    int out = kNotLen;
    Dims shape;
    bool is_int = true;
    if (op == "Unsqueeze" && n.input.size() <= 2 && steps_ > 0) {
        std::vector<int64_t> axes = attr_ints(n, "axes");
        if (has_in(n, 1)) {
            if (!val(in(n, 1)).c) return false;
            axes = const_ints(in(n, 1), "axes");
        }
        if (kind(0) == kLen && (axes == std::vector<int64_t>{1} || axes == std::vector<int64_t>{-1}))
            out = kLenCol, shape = {b, num(1)};
        else if (kind(0) == kValid && (axes == std::vector<int64_t>{2} || axes == std::vector<int64_t>{-1}))
            out = kValidSteps, shape = {b, t, num(1)};
        else if (kind(0) == kValid && axes == std::vector<int64_t>{1, 2})
            out = kValidKeys, shape = {b, num(1), num(1), t};
    } else if (op == "Less" && n.input.size() == 2 && kind(0) == kNotLen && kind(1) == kLenCol) {
        // The step indices 0, 1, ..., T-1, compared with each sample's length.
        const Value &ids = val(in(n, 0));
        if (!ids.c || !ids.c->is_int || ids.c->dims != std::vector<int64_t>{steps_}) return false;
        for (int64_t k = 0; k < steps_; ++k)
            if (ids.c->i[size_t(k)] != num(k)) return false;
        out = kValid, shape = {b, t};
    } else if (op == "Sub" && n.input.size() == 2 && kind(0) == kLenCol && kind(1) == kNotLen) {
        const Value &one = val(in(n, 1));
        if (one.c && one.c->is_int && one.c->count() == 1 && one.c->i[0] == num(1)) out = kLenLast, shape = {b, num(1)};
    } else if (op == "Cast" && n.input.size() == 1) {
        const int64_t to = attr_i(n, "to", 0);
        if (kind(0) == kLenLast && (to == kInt64 || to == kInt32)) out = kLenLast, shape = {b, num(1)};
        else if (kind(0) == kLenCol && to == kFloat) out = kLenFloat, shape = {b, num(1)}, is_int = false;
    } else if (op == "Where" && n.input.size() == 3 && kind(0) == kValidKeys && kind(1) == kNotLen &&
               kind(2) == kNotLen) {
        // 0 at the valid keys, -inf (or a float as good: exp() of it is 0) at the padded ones.
        const double keep = scalar(in(n, 1)), drop = scalar(in(n, 2));
        if (keep == 0.0 && drop <= -1e9 && !val(in(n, 1)).c->is_int)
            out = kKeyMask, shape = {b, num(1), num(1), t}, is_int = false;
    }
    if (out == kNotLen) return false;
    Value &v = val(n.output[0]);
    v.len = out;
    v.has_shape = true;
    v.shape = shape;
    v.is_int = is_int;
    return true;
}

// Folds node n when every input is a constant (or a shape is known).
bool Importer::fold(const Node &n) {
    const std::string &op = n.op_type;
    if (!n.domain.empty() && n.domain != "ai.onnx") return false;
    auto set = [&](size_t k, ConstPtr c) {
        if (k >= n.output.size() || n.output[k].empty()) return;
        Value &v = val(n.output[k]);
        v.c = c;
        v.is_int = c->is_int;
        v.has_shape = true;
        v.shape = dims_of(c->dims);
    };
    if (op == "Constant") {
        auto c = std::make_shared<Const>();
        const Attribute *a = nullptr;
        if ((a = n.attr("value")) && !a->t.empty()) {
            set(0, const_of_tensor(a->t[0]));
            return true;
        }
        if ((a = n.attr("value_float"))) c->f = {a->f};
        else if ((a = n.attr("value_floats"))) {
            c->f.assign(a->floats.begin(), a->floats.end());
            c->dims = {int64_t(a->floats.size())};
        } else if ((a = n.attr("value_int"))) {
            c->is_int = true;
            c->i = {num(a->i)};
        } else if ((a = n.attr("value_ints"))) {
            c->is_int = true;
            for (int64_t v : a->ints) c->i.push_back(num(v));
            c->dims = {int64_t(a->ints.size())};
        } else {
            refuse("a Constant without a value snn reads (sparse_value or strings)");
        }
        set(0, c);
        return true;
    }
    if (op == "Shape") {
        const Value &x = val(in(n, 0));
        if (!x.has_shape) return false;
        int64_t r = int64_t(x.shape.size()), start = attr_i(n, "start", 0), end = attr_i(n, "end", r);
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = std::max<int64_t>(0, std::min(start, r));
        end = std::max<int64_t>(start, std::min(end, r));
        auto c = std::make_shared<Const>();
        c->is_int = true;
        for (int64_t d = start; d < end; ++d) c->i.push_back(x.shape[size_t(d)]);
        c->dims = {end - start};
        set(0, c);
        return true;
    }
    if (op == "Size") {
        const Value &x = val(in(n, 0));
        if (!x.has_shape) return false;
        Sym s = num(1);
        for (const Sym &d : x.shape) s = sym_mul(s, d);
        auto c = std::make_shared<Const>();
        c->is_int = true;
        c->i = {s};
        set(0, c);
        return true;
    }
    // Every other foldable op needs all its inputs constant.
    std::vector<ConstPtr> cs;
    for (const std::string &i : n.input) {
        if (i.empty()) {
            cs.push_back(nullptr);
            continue;
        }
        const Value &v = val(i);
        if (!v.c) return false;
        cs.push_back(v.c);
    }
    if (cs.empty() || !cs[0]) return false;
    const Const &x = *cs[0];
    auto c = std::make_shared<Const>();
    c->is_int = x.is_int;
    static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow", "Mod",
                                                 "Max", "Min", "Equal", "Less", "Greater"};
    if (binary.count(op) && cs.size() == 2 && cs[1]) {
        set(0, fold_binary(op, x, *cs[1]));
        return true;
    }
    if (op == "Identity") {
        set(0, cs[0]);
        return true;
    }
    if (op == "Sqrt" || op == "Reciprocal" || op == "Neg" || op == "Exp" || op == "Erf" || op == "Abs" ||
        op == "Floor" || op == "Ceil") {
        if (x.is_int && op != "Neg" && op != "Abs") return false;
        c->dims = x.dims;
        if (x.is_int) {
            for (const Sym &s : x.i) c->i.push_back(op == "Neg" ? sym_sub(num(0), s) : s.concrete() && s.b != INT64_MIN ? num(std::abs(s.b)) : unknown_sym());
        } else {
            for (double v : x.f) {
                const double r = op == "Sqrt" ? sqrt(v) : op == "Reciprocal" ? 1.0 / v : op == "Neg" ? -v
                                 : op == "Exp" ? exp(v) : op == "Erf" ? erf(v) : op == "Abs" ? fabs(v)
                                 : op == "Floor" ? floor(v) : ceil(v);
                c->f.push_back(double(float(r)));
            }
        }
        set(0, c);
        return true;
    }
    if (op == "Cast") {
        const int64_t to = attr_i(n, "to", kFloat);
        c->dims = x.dims;
        c->is_int = is_int_type(int32_t(to));
        if (c->is_int) {
            if (x.is_int) c->i = x.i;
            else
                for (double v : x.f) {
                    // Beyond int64's range (or NaN) the cast is undefined: nothing snn folds needs it.
                    if (!(v > -9.2e18 && v < 9.2e18)) refuse("a Cast of a value outside int64's range");
                    c->i.push_back(num(int64_t(v)));
                }
        } else {
            if (!x.is_int) c->f = x.f;
            else {
                if (!x.all_concrete()) return false;
                for (const Sym &s : x.i) c->f.push_back(double(s.b));
            }
            if (to == kFloat)
                for (double &v : c->f) v = double(float(v));
        }
        set(0, c);
        return true;
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
        std::vector<int64_t> axes = attr_ints(n, "axes");
        if (cs.size() > 1 && cs[1]) {
            axes.clear();
            for (int64_t k = 0; k < cs[1]->count(); ++k) axes.push_back(cs[1]->int_at(k));
        }
        if (op == "Unsqueeze") {
            const int64_t r = int64_t(x.dims.size() + axes.size());
            for (int64_t &a : axes) a = a < 0 ? a + r : a;
            std::sort(axes.begin(), axes.end());
            c->dims = x.dims;
            for (int64_t a : axes) {
                if (a < 0 || a > int64_t(c->dims.size())) return false;
                c->dims.insert(c->dims.begin() + a, 1);
            }
        } else {
            const int64_t r = int64_t(x.dims.size());
            for (int64_t &a : axes) a = a < 0 ? a + r : a;
            for (int64_t d = 0; d < r; ++d) {
                const bool drop = axes.empty() ? x.dims[size_t(d)] == 1
                                               : std::find(axes.begin(), axes.end(), d) != axes.end();
                if (drop && x.dims[size_t(d)] != 1) return false;
                if (!drop) c->dims.push_back(x.dims[size_t(d)]);
            }
        }
        c->f = x.f;
        c->i = x.i;
        set(0, c);
        return true;
    }
    if (op == "Reshape") {
        if (cs.size() < 2 || !cs[1] || !cs[1]->all_concrete()) return false;
        int64_t known = 1, infer = -1;
        for (int64_t k = 0; k < cs[1]->count(); ++k) {
            int64_t d = cs[1]->int_at(k);
            if (d == 0 && !attr_i(n, "allowzero", 0)) {
                if (size_t(k) >= x.dims.size()) refuse("a 0 in the new shape copies an axis the input lacks");
                d = x.dims[size_t(k)];
            }
            if (d == -1) {
                if (infer >= 0) refuse("the new shape has two -1");
                infer = k;
            } else if (d < 0) {
                refuse("the new shape has a negative dimension");
            } else if (__builtin_mul_overflow(known, d, &known)) {
                refuse("the new shape holds more values than int64 counts");
            }
            c->dims.push_back(d);
        }
        if (infer >= 0) {
            if (known == 0 || x.count() % known) return false;
            c->dims[size_t(infer)] = x.count() / known;
        }
        if (c->count() != x.count()) return false;
        c->f = x.f;
        c->i = x.i;
        set(0, c);
        return true;
    }
    if (op == "Flatten") {
        int64_t axis = attr_i(n, "axis", 1);
        if (axis < 0) axis += int64_t(x.dims.size());
        int64_t a = 1, b = 1;
        for (size_t d = 0; d < x.dims.size(); ++d) {
            int64_t &part = int64_t(d) < axis ? a : b;
            part = size_mul(part, x.dims[d]);
        }
        c->dims = {a, b};
        c->f = x.f;
        c->i = x.i;
        set(0, c);
        return true;
    }
    if (op == "Transpose") {
        const size_t r = x.dims.size();
        std::vector<int64_t> perm = attr_ints(n, "perm");
        if (perm.empty())
            for (size_t d = 0; d < r; ++d) perm.push_back(int64_t(r - 1 - d));
        if (!is_permutation_of(perm, r)) return false;
        for (size_t d = 0; d < r; ++d) c->dims.push_back(x.dims[size_t(perm[d])]);
        const auto xs = strides_of(x.dims), os = strides_of(c->dims);
        for (int64_t k = 0; k < x.count(); ++k) {
            int64_t src = 0;
            for (size_t d = 0; d < r; ++d) src += ((k / os[d]) % c->dims[d]) * xs[size_t(perm[d])];
            if (x.is_int) c->i.push_back(x.i[size_t(src)]);
            else c->f.push_back(x.f[size_t(src)]);
        }
        set(0, c);
        return true;
    }
    if (op == "Gather") {
        if (cs.size() < 2 || !cs[1] || !cs[1]->all_concrete()) return false;
        const Const &idx = *cs[1];
        const int64_t r = int64_t(x.dims.size());
        int64_t axis = attr_i(n, "axis", 0);
        if (axis < 0) axis += r;
        if (axis < 0 || axis >= r) return false;
        const int64_t outer = [&] { int64_t p = 1; for (int64_t d = 0; d < axis; ++d) p = size_mul(p, x.dims[size_t(d)]); return p; }();
        const int64_t inner = [&] { int64_t p = 1; for (int64_t d = axis + 1; d < r; ++d) p = size_mul(p, x.dims[size_t(d)]); return p; }();
        const int64_t len = x.dims[size_t(axis)];
        c->dims.assign(x.dims.begin(), x.dims.begin() + axis);
        c->dims.insert(c->dims.end(), idx.dims.begin(), idx.dims.end());
        c->dims.insert(c->dims.end(), x.dims.begin() + axis + 1, x.dims.end());
        if (c->count() > kMaxFolded) return false;
        // (an empty result: its outer count may be any size)
        for (int64_t o = 0; c->count() > 0 && o < outer; ++o)
            for (int64_t j = 0; j < idx.count(); ++j) {
                int64_t at = idx.int_at(j);
                if (at < 0) at += len;
                if (at < 0 || at >= len) refuse("index out of range");
                for (int64_t q = 0; q < inner; ++q) {
                    const size_t s = size_t((o * len + at) * inner + q);
                    if (x.is_int) c->i.push_back(x.i[s]);
                    else c->f.push_back(x.f[s]);
                }
            }
        set(0, c);
        return true;
    }
    if (op == "Concat") {
        const int64_t r = int64_t(x.dims.size());
        int64_t axis = attr_i(n, "axis", 0);
        if (axis < 0) axis += r;
        if (axis < 0 || axis >= r) refuse("axis out of range");
        c->dims = x.dims;
        c->dims[size_t(axis)] = 0;
        for (const ConstPtr &p : cs) {
            if (!p || int64_t(p->dims.size()) != r) return false;
            if (p->is_int != x.is_int) return false;
            for (int64_t d = 0; d < r; ++d)
                if (d != axis && p->dims[size_t(d)] != x.dims[size_t(d)]) refuse("inputs of different shapes");
            c->dims[size_t(axis)] += p->dims[size_t(axis)];
        }
        int64_t outer = 1;
        for (int64_t d = 0; d < axis; ++d) outer = size_mul(outer, x.dims[size_t(d)]);
        for (int64_t o = 0; c->count() > 0 && o < outer; ++o)
            for (const ConstPtr &p : cs) {
                const int64_t chunk = p->count() / std::max<int64_t>(outer, 1);
                for (int64_t q = 0; q < chunk; ++q) {
                    if (x.is_int) c->i.push_back(p->i[size_t(o * chunk + q)]);
                    else c->f.push_back(p->f[size_t(o * chunk + q)]);
                }
            }
        set(0, c);
        return true;
    }
    if (op == "Slice") {
        if (cs.size() < 3 || !cs[1] || !cs[2]) return false;
        const int64_t r = int64_t(x.dims.size());
        std::vector<int64_t> starts, ends, axes, steps;
        if (!cs[1]->all_concrete() || !cs[2]->all_concrete()) return false;
        for (int64_t k = 0; k < cs[1]->count(); ++k) starts.push_back(cs[1]->int_at(k));
        for (int64_t k = 0; k < cs[2]->count(); ++k) ends.push_back(cs[2]->int_at(k));
        if (cs.size() > 3 && cs[3])
            for (int64_t k = 0; k < cs[3]->count(); ++k) axes.push_back(cs[3]->int_at(k));
        else
            for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
        if (cs.size() > 4 && cs[4])
            for (int64_t k = 0; k < cs[4]->count(); ++k) steps.push_back(cs[4]->int_at(k));
        else
            steps.assign(starts.size(), 1);
        if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
            refuse("starts, ends, axes and steps of different lengths");
        std::vector<int64_t> lo(size_t(r), 0), hi = x.dims;
        for (size_t k = 0; k < axes.size(); ++k) {
            int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
            if (a < 0 || a >= r || steps[k] != 1) return false;
            const int64_t len = x.dims[size_t(a)];
            int64_t s = starts[k] < 0 ? std::max(starts[k], -len) + len : std::min(starts[k], len);
            int64_t e = ends[k] < 0 ? std::max(ends[k], -len) + len : std::min(ends[k], len);
            s = std::max<int64_t>(0, std::min(s, len));
            e = std::max<int64_t>(s, std::min(e, len));
            lo[size_t(a)] = s;
            hi[size_t(a)] = e;
        }
        for (int64_t d = 0; d < r; ++d) c->dims.push_back(hi[size_t(d)] - lo[size_t(d)]);
        const auto xs = strides_of(x.dims), os = strides_of(c->dims);
        for (int64_t k = 0; k < c->count(); ++k) {
            int64_t src = 0;
            for (int64_t d = 0; d < r; ++d) src += ((k / os[size_t(d)]) % c->dims[size_t(d)] + lo[size_t(d)]) * xs[size_t(d)];
            if (x.is_int) c->i.push_back(x.i[size_t(src)]);
            else c->f.push_back(x.f[size_t(src)]);
        }
        set(0, c);
        return true;
    }
    if (op == "ConstantOfShape") {
        const Attribute *a = n.attr("value");
        ConstPtr fillc = a && !a->t.empty() ? const_of_tensor(a->t[0]) : nullptr;
        if (fillc && fillc->count() != 1) refuse("a value that is not one element");
        const bool int_fill = fillc && fillc->is_int;
        const double fill = fillc ? fillc->at(0) : 0.0;
        if (!x.all_concrete()) {
            // A batch-sized fill (an initial recurrent state): only its zeros matter.
            if (fill != 0.0) return false;
            Value &v = val(n.output[0]);
            v.zeros = true;
            v.has_shape = true;
            v.shape = x.i;
            return true;
        }
        for (const Sym &s : x.i) {
            if (s.b < 0) refuse("a negative dimension");
            c->dims.push_back(s.b);
        }
        c->is_int = int_fill;
        if (c->count() > kMaxFolded) return false;
        for (int64_t k = 0; k < c->count(); ++k) {
            if (int_fill) c->i.push_back(fillc->i[0]);
            else c->f.push_back(fill);
        }
        set(0, c);
        return true;
    }
    if (op == "Trilu") {
        if (x.dims.size() < 2) return false;
        if (cs.size() > 1 && cs[1] && cs[1]->count() != 1) refuse("k that is not one value");
        const int64_t kk = cs.size() > 1 && cs[1] ? cs[1]->int_at(0) : 0;
        const bool upper = attr_i(n, "upper", 1) != 0;
        *c = x;
        const int64_t rows = x.dims[x.dims.size() - 2], cols = x.dims.back();
        for (int64_t k = 0; k < c->count(); ++k) {
            const int64_t i = (k / cols) % rows, j = k % cols;
            const bool keep = upper ? j - i >= kk : j - i <= kk;
            if (!keep) {
                if (c->is_int) c->i[size_t(k)] = num(0);
                else c->f[size_t(k)] = 0.0;
            }
        }
        set(0, c);
        return true;
    }
    if (op == "Where") {
        if (cs.size() != 3 || !cs[1] || !cs[2]) return false;
        const Const &t = *cs[1], &e = *cs[2];
        Dims d1, d2;
        if (!broadcast_dims(dims_of(x.dims), dims_of(t.dims), &d1) || !broadcast_dims(d1, dims_of(e.dims), &d2))
            return false;
        if (!(dims_of(x.dims) == d2 && dims_of(t.dims) == d2 && dims_of(e.dims) == d2)) {
            // broadcast the three with the binary folder: cond * 1 then pick
            return false;
        }
        c->dims = x.dims;
        c->is_int = t.is_int;
        for (int64_t k = 0; k < x.count(); ++k) {
            const bool cond = x.at(k) != 0.0;
            if (c->is_int) c->i.push_back(cond ? t.i[size_t(k)] : e.i[size_t(k)]);
            else c->f.push_back(cond ? t.f[size_t(k)] : e.f[size_t(k)]);
        }
        set(0, c);
        return true;
    }
    if (op == "Range") {
        if (cs.size() != 3 || !cs[1] || !cs[2] || !x.all_concrete()) return false;
        if (x.count() < 1 || cs[1]->count() < 1 || cs[2]->count() < 1) refuse("Range of empty operands");
        const double s = x.at(0), lim = cs[1]->at(0), d = cs[2]->at(0);
        if (d == 0 || !(fabs(s) < 9e15 && fabs(lim) < 9e15)) return false;
        c->is_int = x.is_int;
        // max(ceil((limit - start) / delta), 0) values start + k delta: counted
        // first (a delta too small to move start would never reach the limit)
        const double count = ceil((lim - s) / d);
        if (!(count <= double(kMaxFolded))) return false;
        for (int64_t k = 0; k < (count > 0 ? int64_t(count) : 0); ++k) {
            const double v = s + double(k) * d;
            if (c->is_int) c->i.push_back(num(int64_t(v)));
            else c->f.push_back(v);
        }
        c->dims = {int64_t(c->i.size() + c->f.size())};
        set(0, c);
        return true;
    }
    if (op == "Expand") {
        if (cs.size() != 2 || !cs[1] || !cs[1]->all_concrete()) return false;
        Dims target;
        for (int64_t k = 0; k < cs[1]->count(); ++k) target.push_back(num(cs[1]->int_at(k)));
        Dims bd;
        if (!broadcast_dims(dims_of(x.dims), target, &bd)) return false;
        Const ones;
        ones.is_int = x.is_int;
        for (const Sym &s : bd) ones.dims.push_back(s.b);
        if (ones.count() > kMaxFolded) return false;
        if (x.is_int) ones.i.assign(size_t(ones.count()), num(0));
        else ones.f.assign(size_t(ones.count()), 0.0);
        set(0, fold_binary("Add", x, ones));
        return true;
    }
    return false;
}

// Shape of each output of a node that is not folded (the ops snn maps, and
// the layout ops around them).
void Importer::infer_shape(const Node &n) {
    const std::string &op = n.op_type;
    auto out = [&](size_t k, const Dims &d) {
        if (k >= n.output.size() || n.output[k].empty()) return;
        Value &v = val(n.output[k]);
        v.has_shape = true;
        v.shape = d;
    };
    if (n.input.empty() || !has_in(n, 0)) return;
    const Value &x = val(in(n, 0));
    if (&x == &values_[size_t(input_value_)] && !x.has_shape) return;
    if (!x.has_shape) return;
    const Dims &s = x.shape;
    const size_t r = s.size();
    static const std::set<std::string> same = {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "Elu", "Erf", "Softmax",
                                               "LogSoftmax", "Identity", "Dropout", "Sqrt", "Neg", "Exp", "Log",
                                               "Cast", "BatchNormalization", "LayerNormalization", "Gelu",
                                               "Selu", "HardSigmoid", "HardSwish", "Softplus", "Abs", "Reciprocal",
                                               "Celu", "PRelu", "Mish", "Softsign", "Clip"};
    static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Where"};
    if (same.count(op)) {
        out(0, s);
        return;
    }
    if (binary.count(op)) {
        Dims d = s;
        for (size_t k = 1; k < n.input.size(); ++k) {
            if (!has_in(n, k)) continue;
            const Value &y = val(in(n, k));
            if (!y.has_shape) return;
            Dims bd;
            if (!broadcast_dims(d, y.shape, &bd)) return;
            d = bd;
        }
        out(0, d);
        return;
    }
    if (op == "MatMul") {
        const Value &y = val(in(n, 1));
        if (!y.has_shape || r < 1 || y.shape.empty()) return;
        Dims a = s, b = y.shape;
        if (a.size() == 1) a.insert(a.begin(), num(1));
        if (b.size() == 1) b.push_back(num(1));
        Dims batch;
        if (!broadcast_dims(Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2), &batch)) return;
        batch.push_back(a[a.size() - 2]);
        batch.push_back(b.back());
        if (s.size() == 1) batch.erase(batch.end() - 2);
        if (y.shape.size() == 1) batch.pop_back();
        out(0, batch);
        return;
    }
    if (op == "Gemm") {
        const Value &y = val(in(n, 1));
        if (!y.has_shape || r != 2 || y.shape.size() != 2) return;
        const Sym m = attr_i(n, "transA", 0) ? s[1] : s[0];
        const Sym nn = attr_i(n, "transB", 0) ? y.shape[0] : y.shape[1];
        out(0, {m, nn});
        return;
    }
    if (op == "Conv" || op == "MaxPool" || op == "AveragePool") {
        if (r < 3) return;
        const size_t sp = r - 2;
        std::vector<int64_t> kernel = attr_ints(n, "kernel_shape");
        Sym channels = s[1];
        if (op == "Conv") {
            const Value &w = val(in(n, 1));
            if (!w.has_shape || w.shape.size() != r) return;
            channels = w.shape[0];
            if (kernel.empty())
                for (size_t d = 2; d < r; ++d) kernel.push_back(w.shape[d].b);
        }
        if (kernel.size() != sp) return;
        std::vector<int64_t> strides = attr_ints(n, "strides"), pads = attr_ints(n, "pads"),
                             dil = attr_ints(n, "dilations");
        strides.resize(sp, 1);
        pads.resize(2 * sp, 0);
        dil.resize(sp, 1);
        Dims d = {s[0], channels};
        for (size_t k = 0; k < sp; ++k) {
            if (!s[2 + k].concrete()) return;
            // (sizes past int64: no shape)
            int64_t span, len;
            if (__builtin_sub_overflow(kernel[k], 1, &span) || __builtin_mul_overflow(dil[k], span, &span) ||
                __builtin_add_overflow(span, 1, &span) || __builtin_add_overflow(s[2 + k].b, pads[k], &len) ||
                __builtin_add_overflow(len, pads[k + sp], &len) || __builtin_sub_overflow(len, span, &len))
                return;
            if (len < 0 || strides[k] <= 0) return;
            const int64_t o = len / strides[k] + 1 + (attr_i(n, "ceil_mode", 0) && len % strides[k] ? 1 : 0);
            d.push_back(num(o));
        }
        out(0, d);
        return;
    }
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
        Dims d = s;
        for (size_t k = 2; k < r; ++k) d[k] = num(1);
        out(0, d);
        return;
    }
    if (op == "Flatten") {
        int64_t axis = attr_i(n, "axis", 1);
        if (axis < 0) axis += int64_t(r);
        Sym a = num(1), b = num(1);
        for (size_t d = 0; d < r; ++d) {
            if (int64_t(d) < axis) a = sym_mul(a, s[d]);
            else b = sym_mul(b, s[d]);
        }
        out(0, {a, b});
        return;
    }
    if (op == "Transpose") {
        std::vector<int64_t> perm = attr_ints(n, "perm");
        if (perm.empty())
            for (size_t d = 0; d < r; ++d) perm.push_back(int64_t(r - 1 - d));
        if (perm.size() != r) return;
        Dims d;
        for (int64_t p : perm) {
            if (p < 0 || p >= int64_t(r)) return;
            d.push_back(s[size_t(p)]);
        }
        out(0, d);
        return;
    }
    if (op == "Squeeze" || op == "Unsqueeze") {
        std::vector<int64_t> axes = attr_ints(n, "axes");
        if (has_in(n, 1)) {
            const Value &a = val(in(n, 1));
            if (!a.c) return;
            axes.clear();
            for (int64_t k = 0; k < a.c->count(); ++k) axes.push_back(a.c->int_at(k));
        }
        Dims d;
        if (op == "Squeeze") {
            for (int64_t &a : axes) a = a < 0 ? a + int64_t(r) : a;
            for (size_t k = 0; k < r; ++k) {
                const bool drop = axes.empty() ? s[k] == num(1) : std::count(axes.begin(), axes.end(), int64_t(k)) > 0;
                if (!drop) d.push_back(s[k]);
            }
        } else {
            const int64_t nr = int64_t(r + axes.size());
            for (int64_t &a : axes) a = a < 0 ? a + nr : a;
            std::sort(axes.begin(), axes.end());
            d = s;
            for (int64_t a : axes) {
                if (a < 0 || a > int64_t(d.size())) return;
                d.insert(d.begin() + a, num(1));
            }
        }
        out(0, d);
        return;
    }
    if (op == "Reshape") {
        const Value &t = val(in(n, 1));
        if (!t.c || !t.c->is_int) return;
        Dims d;
        int infer = -1;
        Sym total = num(1), known = num(1);
        for (const Sym &q : s) total = sym_mul(total, q);
        for (int64_t k = 0; k < t.c->count(); ++k) {
            Sym q = t.c->i[size_t(k)];
            if (q == num(0) && !attr_i(n, "allowzero", 0)) {
                if (size_t(k) >= r) return;
                q = s[size_t(k)];
            }
            if (q == num(-1)) {
                infer = int(k);
                d.push_back(q);
                continue;
            }
            d.push_back(q);
            known = sym_mul(known, q);
        }
        if (infer >= 0) {
            // total / known, with the batch on either side
            Sym q = unknown_sym();
            if (total.known && known.known) {
                if (known.a == 0 && known.b != 0) q = sym_div(total, known);
                else if (known.a != 0 && known.b == 0 && total.a != 0 && total.b == 0 && total.a % known.a == 0)
                    q = num(total.a / known.a);
            }
            d[size_t(infer)] = q;
        }
        out(0, d);
        return;
    }
    if (op == "Gather") {
        const Value &idx = val(in(n, 1));
        if (!idx.has_shape) return;
        int64_t axis = attr_i(n, "axis", 0);
        if (axis < 0) axis += int64_t(r);
        if (axis < 0 || axis >= int64_t(r)) return;
        Dims d(s.begin(), s.begin() + axis);
        d.insert(d.end(), idx.shape.begin(), idx.shape.end());
        d.insert(d.end(), s.begin() + axis + 1, s.end());
        out(0, d);
        return;
    }
    if (op == "Slice") {
        if (!has_in(n, 1) || !has_in(n, 2)) return;
        const Value &st = val(in(n, 1)), &en = val(in(n, 2));
        if (!st.c || !en.c) return;
        std::vector<int64_t> axes;
        if (has_in(n, 3)) {
            if (!val(in(n, 3)).c) return;
            for (int64_t k = 0; k < val(in(n, 3)).c->count(); ++k) axes.push_back(val(in(n, 3)).c->int_at(k));
        } else {
            for (int64_t k = 0; k < st.c->count(); ++k) axes.push_back(k);
        }
        if (has_in(n, 4)) {
            const Value &sp = val(in(n, 4));
            if (!sp.c) return;
            for (int64_t k = 0; k < sp.c->count(); ++k)
                if (sp.c->at(k) != 1) return;
        }
        if (int64_t(axes.size()) != st.c->count() || en.c->count() != st.c->count()) return;
        Dims d = s;
        for (size_t k = 0; k < axes.size(); ++k) {
            int64_t a = axes[k] < 0 ? axes[k] + int64_t(r) : axes[k];
            if (a < 0 || a >= int64_t(r)) return;
            if (!s[size_t(a)].concrete()) return;
            const int64_t len = s[size_t(a)].b;
            int64_t b0 = st.c->int_at(int64_t(k)), e0 = en.c->int_at(int64_t(k));
            b0 = b0 < 0 ? std::max(b0, -len) + len : std::min(b0, len);
            e0 = e0 < 0 ? std::max(e0, -len) + len : std::min(e0, len);
            b0 = std::max<int64_t>(0, std::min(b0, len));
            e0 = std::max<int64_t>(b0, std::min(e0, len));
            d[size_t(a)] = num(e0 - b0);
        }
        out(0, d);
        return;
    }
    if (op == "Concat") {
        int64_t axis = attr_i(n, "axis", 0);
        if (axis < 0) axis += int64_t(r);
        if (axis < 0 || axis >= int64_t(r)) return;
        Dims d = s;
        for (size_t k = 1; k < n.input.size(); ++k) {
            const Value &y = val(in(n, k));
            if (!y.has_shape || y.shape.size() != r) return;
            d[size_t(axis)] = sym_add(d[size_t(axis)], y.shape[size_t(axis)]);
        }
        out(0, d);
        return;
    }
    if (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceSum") {
        std::vector<int64_t> axes = attr_ints(n, "axes");
        if (has_in(n, 1)) {
            const Value &a = val(in(n, 1));
            if (!a.c) return;
            axes.clear();
            for (int64_t k = 0; k < a.c->count(); ++k) axes.push_back(a.c->int_at(k));
        }
        for (int64_t &a : axes) a = a < 0 ? a + int64_t(r) : a;
        const bool keep = attr_i(n, "keepdims", 1) != 0;
        Dims d;
        for (size_t k = 0; k < r; ++k) {
            const bool red = axes.empty() || std::count(axes.begin(), axes.end(), int64_t(k));
            if (!red) d.push_back(s[k]);
            else if (keep) d.push_back(num(1));
        }
        out(0, d);
        return;
    }
    if (op == "GatherND") {
        // indices [..., k]: the indices' leading axes, then data's past batch_dims + k
        const Value &idx = val(in(n, 1));
        const int64_t bd = attr_i(n, "batch_dims", 0);
        if (!idx.has_shape || idx.shape.empty() || !idx.shape.back().concrete()) return;
        const int64_t k = idx.shape.back().b;
        if (bd < 0 || k < 0 || k > int64_t(r) || bd > int64_t(r) - k) return;
        Dims d(idx.shape.begin(), idx.shape.end() - 1);
        d.insert(d.end(), s.begin() + bd + k, s.end());
        out(0, d);
        return;
    }
    if (op == "LSTM" || op == "GRU") {
        if (r != 3) return;
        const int64_t h = attr_i(n, "hidden_size", 0);
        const int64_t dirs = attr_s(n, "direction", "forward") == "bidirectional" ? 2 : 1;
        out(0, {s[0], num(dirs), s[1], num(h)});
        out(1, {num(dirs), s[1], num(h)});
        out(2, {num(dirs), s[1], num(h)});
        return;
    }
}

// ---- 4: mapping ----------------------------------------------------------------

std::vector<std::vector<int>> Importer::canon_for(Out::Kind kind, const Dims &shape, int) {
    // shape: the ONNX shape of the layer's output, the batch first
    std::vector<std::vector<int>> c{{0}};
    for (size_t k = 1; k < shape.size(); ++k) c.push_back(atoms_for(shape[k].b));
    (void)kind;
    return c;
}

int Importer::emit(Out o) {
    if (o.primary >= 0 && values_[size_t(o.primary)].producer >= 0)
        o.source = snn_layer_of(node(values_[size_t(o.primary)].producer).name);
    outs_.push_back(std::move(o));
    return int(outs_.size()) - 1;
}

const View &Importer::view_of(const std::string &name) {
    const View &v = padded_view_of(name);
    if (v.padded)
        refuse("'" + name + "' is a sequence with its padded steps set from 'lengths', which only conv1d (zeros) "
               "and seqpool (ReduceSum then / length; ReduceMax of -inf) read");
    return v;
}

// view_of, or a layer's output with its padded steps replaced.
const View &Importer::padded_view_of(const std::string &name) {
    Value &v = val(name);
    if (v.c) refuse("'" + name + "' is a constant where snn needs the output of a layer");
    if (v.len != kNotLen) refuse(kLengthsUses);
    if (!v.mapped) refuse("'" + name + "' is not the output of a mapped layer");
    return v.view;
}

// The layer whose output is v in snn's layout for `want`: v's layer itself,
// or a flatten of it (an image or sequence read as a vector).
int Importer::materialize(const View &v, Out::Kind want, const char *what) {
    const Out &l = outs_[size_t(v.layer)];
    if (l.kind == Out::tokens) refuse(std::string(what) + " reads token ids (an embedding must look them up first)");
    if (is_canonical(v) && l.kind == want) return v.layer;
    if (want == Out::vector && v.dims.size() == 2 && leaves_of(v.dims[0]) == std::vector<int>{0} &&
        l.canon.size() >= 2) {
        std::vector<int> rest;
        for (size_t k = 1; k < l.canon.size(); ++k)
            for (int a : leaves_of(l.canon[k])) rest.push_back(a);
        if (leaves_of(v.dims[1]) == rest) {
            if (l.kind == Out::vector) return v.layer;
            for (size_t q = size_t(v.layer) + 1; q < outs_.size(); ++q)
                if (outs_[q].text == "flatten" && outs_[q].input == v.layer) return int(q);
            Out f;
            f.text = "flatten";
            f.input = v.layer;
            f.kind = Out::vector;
            f.canon = {{0}, rest};
            return emit(f);
        }
    }
    if (is_canonical(v))
        refuse(std::string(what) + format(" needs %s, and its input is %s", want == Out::image ? "an image" :
                                          want == Out::seq ? "a sequence" : "a vector",
                                          l.kind == Out::image ? "an image" : l.kind == Out::seq ? "a sequence" : "a vector"));
    refuse(std::string(what) + "'s input is not in snn's layout (its axes are moved in a way no snn layer reads)");
}

// Views through axis-moving ops.
View Importer::reshape_view(const View &v, const Dims &target) {
    std::vector<int> atoms;
    for (const auto &d : v.dims)
        for (int a : leaves_of(d)) atoms.push_back(a);
    // -1 and the batch: count the batch factors.
    View out{v.layer, {}};
    size_t at = 0;
    int64_t total_known = 1;
    bool has_batch = false;
    for (int a : atoms) {
        if (a == 0) has_batch = true;
        else if (__builtin_mul_overflow(total_known, atom_size_[size_t(a)], &total_known))
            refuse("a value of more elements than int64 counts");
    }
    // resolve -1
    Dims t = target;
    int infer = -1;
    int64_t known = 1;
    bool t_batch = false;
    for (size_t k = 0; k < t.size(); ++k) {
        const Sym q = t[k];
        if (q == num(-1)) {
            if (infer >= 0) refuse("the shape has two -1");
            infer = int(k);
        } else if (q.known && q.a == 1 && q.b == 0) {
            t_batch = true;
        } else if (q.known && q.a == 0 && q.b > 0) {
            if (__builtin_mul_overflow(known, q.b, &known)) refuse("the new shape " + dims_text(target) + " does not fit");
        } else if (q.known && q.a > 1 && q.b == 0) {
            t_batch = true;
            if (__builtin_mul_overflow(known, q.a, &known)) refuse("the new shape " + dims_text(target) + " does not fit");
        } else {
            refuse("the new shape " + dims_text(target) + " is not known");
        }
    }
    if (batch_.concrete() && has_batch) {
        // a file with a fixed batch: the batch's dimension is the first one of that size
        t_batch = false;
        for (size_t k = 0; k < t.size(); ++k)
            if (int(k) != infer && t[k] == batch_) {
                t[k] = Sym{1, 0, true};
                known /= batch_.b;
                t_batch = true;
                break;
            }
    }
    if (infer >= 0) {
        if (has_batch && !t_batch) refuse("the new shape " + dims_text(target) + " merges the batch with other axes");
        if (known == 0 || total_known % known) refuse("the new shape " + dims_text(target) + " does not fit");
        t[size_t(infer)] = num(total_known / known);
    }
    for (const Sym &q : t) {
        std::vector<int> dim;
        if (q.known && q.a >= 1 && q.b == 0) {
            if (at >= atoms.size() || atoms[at] != 0 || q.a != 1)
                refuse("the new shape " + dims_text(target) + " merges the batch with other axes");
            dim.push_back(0);
            ++at;
            out.dims.push_back(dim);
            continue;
        }
        int64_t want = q.b, have = 1;
        while (have < want) {
            if (at >= atoms.size() || atoms[at] == 0)
                refuse("the new shape " + dims_text(target) + " moves values across the batch");
            const int a = atoms[at];
            const int64_t size = atom_size_[size_t(a)];
            int64_t grown;
            if (__builtin_mul_overflow(have, size, &grown)) refuse("the new shape " + dims_text(target) + " does not fit");
            if (grown <= want) {
                if (want % (have * size)) refuse("the new shape " + dims_text(target) + " splits an axis unevenly");
                dim.push_back(a);
                have *= size;
                ++at;
            } else {
                const int64_t part = want / have;
                if (want % have || size % part) refuse("the new shape " + dims_text(target) + " splits an axis unevenly");
                const int a1 = new_atom(part), a2 = new_atom(size / part);
                atom_split_[size_t(a)] = {a1, a2};
                atoms[at] = a2;
                dim.push_back(a1);
                have *= part;
            }
        }
        out.dims.push_back(dim);
    }
    if (at != atoms.size()) refuse("the new shape " + dims_text(target) + " does not hold every value");
    return out;
}

bool Importer::fuse_activation(const View &v, Act act, const std::vector<int> &group, const std::string &out_name) {
    Out &l = outs_[size_t(v.layer)];
    if (!l.fusable || l.act != Act::identity || v.layer != int(outs_.size()) - 1 || l.primary < 0) return false;
    const std::string &prim = values_[size_t(l.primary)].name;
    if (!consumers_within(prim, group)) return false;
    // A file snn wrote names each node by its layer: an activation layer of
    // its own stays one.
    const int here = snn_layer_of(node(group[0]).name);
    if (l.source >= 0 && here >= 0 && here != l.source) return false;
    l.act = act;
    l.primary = id(out_name);
    set_view(out_name, v);
    return true;
}

// An activation of x (a group of nodes, `group`) whose output is out_name:
// fused into the dense or convolution before it, else a layer of its own.
void Importer::activation(const Node &, Act act, const std::vector<int> &group, const std::string &x,
                          const std::string &out_name) {
    const View v = view_of(x);
    const int prim = outs_[size_t(v.layer)].primary;
    if (prim >= 0 && values_[size_t(prim)].name == x && fuse_activation(v, act, group, out_name)) return;
    Out a;
    a.text = act_name(act);
    a.input = v.layer;
    a.kind = outs_[size_t(v.layer)].kind;
    a.canon = outs_[size_t(v.layer)].canon;
    a.primary = id(out_name);
    const int l = emit(a);
    set_view(out_name, View{l, v.dims});
}

void Importer::map_nodes() {
    done_.assign(g_.node.size(), false);
    // The input layer.
    {
        Value &x = values_[size_t(input_value_)];
        const ValueInfo *vi = nullptr;
        for (const ValueInfo &i : g_.input)
            if (i.name == x.name) vi = &i;
        if (!vi->has_shape || vi->shape.empty())
            fail(SNN_ERR_UNSUPPORTED, "the graph input '%s' has no shape", x.name.c_str());
        const Dim &b = vi->shape[0];
        if (b.value == 0) fail(SNN_ERR_UNSUPPORTED, "the graph input '%s' has a batch of 0", x.name.c_str());
        if (b.value > 0) batch_ = num(b.value);
        else if (opt_.batch > 0) batch_ = num(opt_.batch);
        Dims s{batch_};
        for (size_t k = 1; k < vi->shape.size(); ++k) {
            const Dim &d = vi->shape[k];
            if (d.value > 0) {
                s.push_back(num(d.value));
                continue;
            }
            const bool steps = k == 1 && (vi->shape.size() == 3 || (vi->shape.size() == 2 && x.is_int));
            if (steps && opt_.sequence_length > 0) {
                s.push_back(num(opt_.sequence_length));
                continue;
            }
            if (steps)
                fail(SNN_ERR_UNSUPPORTED,
                     "the number of steps of input '%s' is symbolic ('%s'); give it in the options "
                     "(snn_onnx_import_options.sequence_length)",
                     x.name.c_str(), d.param.c_str());
            fail(SNN_ERR_UNSUPPORTED, "dimension %zu of input '%s' is not a number ('%s'); snn needs every size "
                 "but the batch", k, x.name.c_str(), d.param.c_str());
        }
        int64_t per_sample = 1;
        for (size_t k = 1; k < s.size(); ++k)
            if (__builtin_mul_overflow(per_sample, s[k].b, &per_sample) || per_sample > INT32_MAX)
                fail(SNN_ERR_UNSUPPORTED, "the graph input '%s' holds more than 2^31 values per sample", x.name.c_str());
        x.has_shape = true;
        x.shape = s;
        if (s.size() == 3 || (s.size() == 2 && x.is_int)) steps_ = s[1].b;
        Out in;
        if (x.is_int) {
            if (s.size() != 2) fail(SNN_ERR_UNSUPPORTED, "an integer input must be token ids [batch, T]");
            in.kind = Out::tokens;
            in.text = format("input tokens %lld", (long long)s[1].b);
        } else if (s.size() == 2) {
            in.kind = Out::vector;
            in.text = format("input %lld", (long long)s[1].b);
        } else if (s.size() == 4) {
            in.kind = Out::image;
            in.text = format("input %lldx%lldx%lld", (long long)s[2].b, (long long)s[3].b, (long long)s[1].b);
        } else if (s.size() == 3) {
            in.kind = Out::seq;
            in.text = format("input seq %lldx%lld", (long long)s[1].b, (long long)s[2].b);
        } else {
            fail(SNN_ERR_UNSUPPORTED, "the graph input '%s' has %zu dimensions; snn takes [batch, F], "
                 "[batch, C, H, W], [batch, T, F] or token ids [batch, T]", x.name.c_str(), s.size());
        }
        atom_size_ = {-1};
        atom_split_ = {{}};
        in.canon = canon_for(in.kind, s);
        in.primary = input_value_;
        const int l = emit(in);
        x.mapped = true;
        x.view = canonical_view(l);
        if (lengths_value_ >= 0) {
            Value &len = values_[size_t(lengths_value_)];
            len.len = kLen;
            len.has_shape = true;
            len.shape = {batch_};
        }
    }
    for (int k : order_) fold_and_shape(k);
    find_attention();
    for (int k : order_) {
        if (!live_[size_t(k)] || done_[size_t(k)]) continue;
        const Node &n = node(k);
        // folded: nothing to map
        bool folded = !n.output.empty();
        for (const std::string &o : n.output)
            if (!o.empty() && !val(o).c && !val(o).zeros && val(o).len == kNotLen) folded = false;
        if (folded) continue;
        // an input that could not be mapped: this node is named only when
        // snn has no op for it at all
        bool poisoned = false;
        for (const std::string &i : n.input)
            if (!i.empty() && !val(i).c && !val(i).zeros && !val(i).mapped && val(i).len == kNotLen) poisoned = true;
        try {
            for (const Attribute &a : n.attribute)
                if (a.has_graph) refuse("a node with a subgraph (If, Loop, Scan): snn maps no control flow");
            if (poisoned) {
                static const std::set<std::string> known = {
                    "Gemm", "MatMul", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                    "BatchNormalization", "LayerNormalization", "Relu", "Sigmoid", "Tanh", "LeakyRelu", "Softmax",
                    "Gelu", "Add", "Mul", "Div", "Sub", "Pow", "Sqrt", "Erf", "Concat", "Gather", "Slice",
                    "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Dropout", "LSTM",
                    "GRU", "ReduceMean", "ReduceMax", "ReduceSum", "Where", "GatherND", "Less", "Shape", "Cast",
                    "Constant"};
                if (!known.count(n.op_type)) refuse("snn has no layer that computes " + n.op_type);
                continue;
            }
            map_node(k);
        } catch (const Refusal &r) {
            problems_.push_back(where(n) + ": " + r.why);
        }
    }
}

void Importer::map_node(int k) {
    const Node &n = node(k);
    const std::string &op = n.op_type;
    done_[size_t(k)] = true;
    if (!n.domain.empty() && n.domain != "ai.onnx") refuse("an op of domain '" + n.domain + "', which snn does not map");
    if (k < int(region_of_.size()) && region_of_[size_t(k)] >= 0) {
        map_attention(*regions_[size_t(region_of_[size_t(k)])]);
        return;
    }
    if (reads_lengths(n) && op != "Where" && op != "GatherND" && op != "LSTM" && op != "GRU") refuse(kLengthsUses);
    for (const auto &a : kActOps)
        if (op == a[0]) {
            Act act;
            parse_act(a[1], &act);
            if (op == "Sigmoid") {
                // SiLU: x * sigmoid(x)
                const int c = sole_consumer(n.output[0]);
                if (c >= 0 && node(c).op_type == "Mul" && other_input(node(c), n.output[0]) == in(n, 0)) {
                    activation(n, Act::silu, {k, c}, in(n, 0), node(c).output[0]);
                    done_[size_t(c)] = true;
                    return;
                }
            }
            activation(n, act, {k}, in(n, 0), n.output[0]);
            return;
        }
    if (op == "LeakyRelu") {
        const double alpha = attr_f(n, "alpha", 0.01);
        if (float(alpha) != 0.01f) refuse(format("negative slope %g; snn's leaky_relu has 0.01", alpha));
        activation(n, Act::leaky_relu, {k}, in(n, 0), n.output[0]);
        return;
    }
    if (op == "Gelu") {
        if (attr_s(n, "approximate", "none") != "none") refuse("the tanh approximation of GELU; snn's gelu is the erf form");
        activation(n, Act::gelu, {k}, in(n, 0), n.output[0]);
        return;
    }
    if (op == "Div" || op == "Mul") {
        if (map_gelu(n, k)) return;
        refuse("multiplies or divides computed values in a way no snn layer does");
    }
    if (op == "Gemm") return map_dense_gemm(n, k);
    if (op == "MatMul") return map_matmul(n, k);
    if (op == "Conv") return map_conv(n);
    if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") return map_pool(n);
    if (op == "BatchNormalization") return map_batchnorm(n);
    if (op == "LayerNormalization") return map_layernorm(n);
    if (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceSum") return map_reduce(n, k);
    if (op == "Where") return map_where(n);
    if (op == "GatherND") return map_gather_nd(n);
    if (op == "Add") return map_add(n);
    if (op == "Concat") return map_concat(n);
    if (op == "Gather") return map_gather(n);
    if (op == "Slice") return map_slice(n);
    if (op == "Flatten" || op == "Reshape" || op == "Transpose" || op == "Squeeze" || op == "Unsqueeze" ||
        op == "Identity")
        return map_layout(n);
    if (op == "Dropout") return map_dropout(n);
    if (op == "LSTM") return map_recurrent(n, true);
    if (op == "GRU") return map_recurrent(n, false);
    if (op == "Softmax") return map_softmax(n);
    if (op == "Elu") refuse("snn has no elu activation");
    if (op == "Sub" || op == "Pow" || op == "Sqrt" || op == "Erf")
        refuse("computes " + op + " on a layer's output outside a pattern snn knows (GELU, layer norm)");
    if (op == "Shape" || op == "Cast" || op == "ConstantOfShape")
        refuse("a shape computation that depends on values snn cannot fold");
    refuse("snn has no layer that computes " + op);
}

// Gemm(A, B, C): dense. B a constant [out, in] (transB) or [in, out].
void Importer::map_dense_gemm(const Node &n, int) {
    if (attr_i(n, "transA", 0)) refuse("transA=1 (the input transposed)");
    if (attr_f(n, "alpha", 1.0) != 1.0 || attr_f(n, "beta", 1.0) != 1.0) refuse("alpha or beta other than 1");
    const View v = view_of(in(n, 0));
    const int src = materialize(v, Out::vector, "Gemm");
    const std::vector<int64_t> wd = const_dims(in(n, 1));
    if (wd.size() != 2) fail(SNN_ERR_FILE_FORMAT, "%s: the weight has %zu dimensions, not 2", where(n).c_str(), wd.size());
    const bool tb = attr_i(n, "transB", 0) != 0;
    const int64_t out = tb ? wd[0] : wd[1], inf = tb ? wd[1] : wd[0];
    int64_t features = 1;
    for (size_t d = 1; d < outs_[size_t(src)].canon.size(); ++d)
        for (int a : leaves_of(outs_[size_t(src)].canon[d])) features = size_mul(features, atom_size_[size_t(a)]);
    if (inf != features)
        fail(SNN_ERR_FILE_FORMAT, "%s: the weight %s does not fit %lld input features", where(n).c_str(),
             ints_text(wd).c_str(), (long long)features);
    std::vector<float> w = floats(in(n, 1), "the weight");
    Out d;
    d.fusable = true;
    d.kind = Out::vector;
    d.text = format("dense %lld", (long long)out);
    d.input = src;
    if (tb) d.params = w;
    else
        for (int64_t o = 0; o < out; ++o)
            for (int64_t i = 0; i < inf; ++i) d.params.push_back(w[size_t(i * out + o)]);
    if (has_in(n, 2)) {
        std::vector<float> b = floats(in(n, 2), "the bias");
        const std::vector<int64_t> bd = const_dims(in(n, 2));
        const int64_t cnt = val(in(n, 2)).c->count();
        if (cnt == 1) b.assign(size_t(out), b[0]);
        else if (cnt != out || (bd.size() == 2 && bd[0] != 1))
            refuse("a bias of shape " + ints_text(bd) + " (snn's dense has one bias per output)");
        d.params.insert(d.params.end(), b.begin(), b.end());
    } else {
        d.nobias = true;
    }
    d.canon = {{0}, atoms_for(out)};
    d.primary = id(n.output[0]);
    const int l = emit(d);
    set_view(n.output[0], canonical_view(l));
}

// MatMul(x, W) [+ Add(b)]: dense on the last axis (vectors and sequences).
void Importer::map_matmul(const Node &n, int k) {
    if (!val(in(n, 1)).c) refuse("multiplies two computed values (only an attention's scores and context do; "
                                 "this one is not recognised as attention)");
    const View v = view_of(in(n, 0));
    const Out::Kind kind = outs_[size_t(v.layer)].kind == Out::seq && v.dims.size() == 3 ? Out::seq : Out::vector;
    const int src = materialize(v, kind, "MatMul");
    const std::vector<int64_t> wd = const_dims(in(n, 1));
    if (wd.size() != 2) refuse("a weight of " + format("%zu", wd.size()) + " dimensions (snn's dense takes [in, out])");
    const int64_t inf = wd[0], out = wd[1];
    const auto &canon = outs_[size_t(src)].canon;
    int64_t features = 1;
    for (int a : leaves_of(canon.back())) features = size_mul(features, atom_size_[size_t(a)]);
    if (kind == Out::vector) {
        features = 1;
        for (size_t d = 1; d < canon.size(); ++d)
            for (int a : leaves_of(canon[d])) features = size_mul(features, atom_size_[size_t(a)]);
    }
    if (inf != features)
        fail(SNN_ERR_FILE_FORMAT, "%s: the weight %s does not fit %lld input features", where(n).c_str(),
             ints_text(wd).c_str(), (long long)features);
    const std::vector<float> w = floats(in(n, 1), "the weight");
    Out d;
    d.fusable = true;
    d.kind = kind;
    d.text = format("dense %lld", (long long)out);
    d.input = src;
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < inf; ++i) d.params.push_back(w[size_t(i * out + o)]);
    std::string result = n.output[0];
    const int c = sole_consumer(n.output[0]);
    std::string bias = c >= 0 && node(c).op_type == "Add" ? other_input(node(c), n.output[0]) : "";
    if (!bias.empty() && val(bias).c) {
        const std::vector<int64_t> bd = const_dims(bias);
        const int64_t cnt = val(bias).c->count();
        bool ok = cnt == out && !bd.empty() && bd.back() == out;
        if (ok) {
            const std::vector<float> b = floats(bias, "the bias");
            d.params.insert(d.params.end(), b.begin(), b.end());
            result = node(c).output[0];
            done_[size_t(c)] = true;
        } else {
            d.nobias = true;
        }
    } else {
        d.nobias = true;
    }
    (void)k;
    d.canon = kind == Out::seq ? std::vector<std::vector<int>>{{0}, canon[1], atoms_for(out)}
                               : std::vector<std::vector<int>>{{0}, atoms_for(out)};
    d.primary = id(result);
    const int l = emit(d);
    set_view(result, canonical_view(l));
}

void Importer::map_conv(const Node &n) {
    // conv1d reads a sample's padded steps as zeros: its input may have them set so.
    const View v = padded_view_of(in(n, 0));
    const std::vector<int64_t> wd = const_dims(in(n, 1));
    if (attr_i(n, "group", 1) != 1) refuse(format("group=%lld (grouped or depthwise convolution)", (long long)attr_i(n, "group", 1)));
    const std::string pad_mode = attr_s(n, "auto_pad", "NOTSET");
    if (pad_mode != "NOTSET" && pad_mode != "VALID") refuse("auto_pad=" + pad_mode + " (give the pads)");
    const size_t sp = wd.size() >= 3 ? wd.size() - 2 : 0;
    if (sp != 1 && sp != 2) refuse(format("a weight of %zu dimensions", wd.size()));
    if (v.padded != kPadNone && (v.padded != kPadZero || sp != 1))
        refuse("convolves a sequence whose padded steps are set to -inf, or as an image (conv1d reads them as 0)");
    std::vector<int64_t> kernel = attr_ints(n, "kernel_shape"), strides = attr_ints(n, "strides"),
                         pads = attr_ints(n, "pads"), dil = attr_ints(n, "dilations");
    if (kernel.empty()) kernel.assign(wd.begin() + 2, wd.end());
    strides.resize(sp, 1);
    pads.resize(2 * sp, 0);
    dil.resize(sp, 1);
    if (kernel != std::vector<int64_t>(wd.begin() + 2, wd.end()))
        fail(SNN_ERR_FILE_FORMAT, "%s: kernel_shape %s differs from the weight's %s", where(n).c_str(),
             ints_text(kernel).c_str(), ints_text(wd).c_str());
    for (size_t d = 0; d < sp; ++d)
        if (pads[d] != pads[d + sp]) refuse("pads differ at the start and the end " + ints_text(pads));
    const std::vector<float> w = floats(in(n, 1), "the weight");
    std::vector<float> b;
    if (has_in(n, 2)) {
        b = floats(in(n, 2), "the bias");
        if (int64_t(b.size()) != wd[0]) fail(SNN_ERR_FILE_FORMAT, "%s: %zu biases for %lld output channels",
                                             where(n).c_str(), b.size(), (long long)wd[0]);
    }
    Out c;
    c.fusable = true;
    c.params = w;
    c.params.insert(c.params.end(), b.begin(), b.end());
    c.nobias = b.empty();
    const Dims &os = shape(n.output[0]);
    if (sp == 2) {
        if (dil[0] != 1 || dil[1] != 1) refuse("dilations " + ints_text(dil) + " (snn's conv has none)");
        const int src = materialize(v, Out::image, "Conv");
        const Dims &is = shape(in(n, 0));
        if (is.size() != 4 || is[1] != num(wd[1]))
            fail(SNN_ERR_FILE_FORMAT, "%s: the weight %s does not fit the input %s", where(n).c_str(),
                 ints_text(wd).c_str(), dims_text(is).c_str());
        c.kind = Out::image;
        c.text = "conv " + pair_text(kernel[0], kernel[1]) + format(" %lld", (long long)wd[0]);
        if (strides[0] != 1 || strides[1] != 1) c.text += " stride=" + pair_text(strides[0], strides[1]);
        if (pads[0] || pads[1]) c.text += " pad=" + pair_text(pads[0], pads[1]);
        c.input = src;
        c.canon = canon_for(Out::image, os);
        c.primary = id(n.output[0]);
        const int l = emit(c);
        set_view(n.output[0], canonical_view(l));
        return;
    }
    // Conv1d over a sequence read as [batch][F][T] (x.transpose(1, 2)).
    const Out &l0 = outs_[size_t(v.layer)];
    if (l0.kind != Out::seq || v.dims.size() != 3 ||
        !same_dims(v.dims, {l0.canon[0], l0.canon[2], l0.canon[1]}))
        refuse("a 1-D convolution whose input is not a sequence with its axes swapped ([batch, F, T])");
    // Its input must be 0 at the padded steps: set so by a Where, or the
    // output of an LSTM/GRU given sequence_lens.
    if (v.padded == kPadNone && !l0.zero_padded)
        refuse_ignoring_lengths("a 1-D convolution of a sequence whose padded steps are not set to 0",
                                "conv1d reads the steps past a sample's length as 0");
    c.kind = Out::seq;
    c.text = format("conv1d %lld %lld", (long long)kernel[0], (long long)wd[0]);
    if (strides[0] != 1) c.text += format(" stride=%lld", (long long)strides[0]);
    if (pads[0]) c.text += format(" pad=%lld", (long long)pads[0]);
    if (dil[0] != 1) c.text += format(" dilation=%lld", (long long)dil[0]);
    c.input = v.layer;
    c.canon = {{0}, atoms_for(os[2].b), atoms_for(os[1].b)};
    c.primary = id(n.output[0]);
    const int l = emit(c);
    set_view(n.output[0], View{l, {{0}, outs_[size_t(l)].canon[2], outs_[size_t(l)].canon[1]}});
}

void Importer::map_pool(const Node &n) {
    const View v = view_of(in(n, 0));
    const int src = materialize(v, Out::image, n.op_type.c_str());
    const Dims &os = shape(n.output[0]);
    const Dims &is = shape(in(n, 0));
    Out p;
    p.kind = Out::image;
    p.input = src;
    if (n.op_type == "GlobalAveragePool") {
        p.text = "globalavgpool";
    } else if (n.op_type == "GlobalMaxPool") {
        p.text = "maxpool " + pair_text(is[2].b, is[3].b);
    } else {
        std::vector<int64_t> kernel = attr_ints(n, "kernel_shape"), strides = attr_ints(n, "strides"),
                             pads = attr_ints(n, "pads"), dil = attr_ints(n, "dilations");
        if (kernel.size() != 2) refuse("a pool that is not 2-D");
        strides.resize(2, 1);
        pads.resize(4, 0);
        dil.resize(2, 1);
        for (int64_t q : pads)
            if (q) refuse("padding " + ints_text(pads) + " (snn's pools have none)");
        if (dil[0] != 1 || dil[1] != 1) refuse("dilations " + ints_text(dil));
        if (attr_i(n, "ceil_mode", 0)) refuse("ceil_mode=1 (snn's pools round down)");
        const std::string pad_mode = attr_s(n, "auto_pad", "NOTSET");
        if (pad_mode != "NOTSET" && pad_mode != "VALID") refuse("auto_pad=" + pad_mode);
        p.text = (n.op_type == "MaxPool" ? "maxpool " : "avgpool ") + pair_text(kernel[0], kernel[1]);
        if (strides[0] != kernel[0] || strides[1] != kernel[1]) p.text += " stride=" + pair_text(strides[0], strides[1]);
        if (n.output.size() > 1 && !n.output[1].empty() && !val(n.output[1]).consumers.empty())
            refuse("the indices output of MaxPool is read");
    }
    p.canon = canon_for(Out::image, os);
    p.primary = id(n.output[0]);
    const int l = emit(p);
    set_view(n.output[0], canonical_view(l));
}

// The shortest decimal text of a float32 attribute read as `f`.
std::string float_text(double f) {
    for (int digits = 1; digits <= 9; ++digits) {
        const std::string t = format("%.*g", digits, f);
        if (float(strtod(t.c_str(), nullptr)) == float(f)) return t;
    }
    return format("%.9g", f);
}

void Importer::map_batchnorm(const Node &n) {
    if (attr_i(n, "training_mode", 0)) refuse("training_mode=1 (export the model in eval mode)");
    for (size_t k = 1; k < n.output.size(); ++k)
        if (!n.output[k].empty() && !val(n.output[k]).consumers.empty()) refuse("its running statistics outputs are read");
    const View v = view_of(in(n, 0));
    const Out::Kind kind = outs_[size_t(v.layer)].kind == Out::image ? Out::image : Out::vector;
    const int src = materialize(v, kind, "BatchNormalization");
    const Dims &is = shape(in(n, 0));
    if (is.size() < 2) refuse("normalises a value without channels");
    const int64_t c = concrete(is[1], "the channels");
    Out b;
    b.kind = kind;
    b.input = src;
    std::vector<float> w = floats(in(n, 1), "the scale"), bias = floats(in(n, 2), "the bias"),
                       mean = floats(in(n, 3), "the mean"), var = floats(in(n, 4), "the variance");
    for (const auto *t : {&w, &bias, &mean, &var})
        if (int64_t(t->size()) != c)
            fail(SNN_ERR_FILE_FORMAT, "%s: a statistic or parameter of %zu values for %lld channels", where(n).c_str(),
                 t->size(), (long long)c);
    const double eps = attr_f(n, "epsilon", 1e-5), mom = attr_f(n, "momentum", 0.9);
    b.text = "batchnorm";
    const std::string eps_t = float_text(eps);
    if (strtod(eps_t.c_str(), nullptr) != 1e-5) b.text += " eps=" + eps_t;
    std::string mom_t;
    for (int digits = 1; digits <= 9 && mom_t.empty(); ++digits) {
        const std::string t = format("%.*g", digits, 1.0 - mom);
        if (float(1.0 - strtod(t.c_str(), nullptr)) == float(mom)) mom_t = t;
    }
    if (mom_t.empty()) mom_t = format("%.9g", 1.0 - mom);
    if (strtod(mom_t.c_str(), nullptr) != 0.1) b.text += " momentum=" + mom_t;
    b.params = w;
    b.params.insert(b.params.end(), bias.begin(), bias.end());
    b.state = mean;
    b.state.insert(b.state.end(), var.begin(), var.end());
    b.state.push_back(0.0f);
    b.canon = outs_[size_t(src)].canon;
    b.primary = id(n.output[0]);
    const int l = emit(b);
    set_view(n.output[0], canonical_view(l));
}

void Importer::map_layernorm(const Node &n) {
    for (size_t k = 1; k < n.output.size(); ++k)
        if (!n.output[k].empty() && !val(n.output[k]).consumers.empty()) refuse("its mean or deviation output is read");
    const View v = view_of(in(n, 0));
    const Out &l0 = outs_[size_t(v.layer)];
    const int64_t axis = norm_axis(attr_i(n, "axis", -1), v.dims.size());
    const Out::Kind kind = l0.kind == Out::seq ? Out::seq : l0.kind == Out::image ? Out::image : Out::vector;
    const int src = materialize(v, kind, "LayerNormalization");
    if (kind == Out::seq ? axis != 2 : axis != 1)
        refuse(format("normalises from axis %lld; snn's layernorm normalises each sample (each step of a "
                      "sequence)", (long long)axis));
    const Dims &is = shape(in(n, 0));
    int64_t f = 1;
    for (size_t d = size_t(axis); d < is.size(); ++d) f = size_mul(f, concrete(is[d], "the normalised shape"));
    std::vector<float> w = floats(in(n, 1), "the scale"), b;
    if (has_in(n, 2)) b = floats(in(n, 2), "the bias");
    else if (int64_t(w.size()) == f) b.assign(size_t(f), 0.0f);  // (f checked against values read first)
    if (int64_t(w.size()) != f || int64_t(b.size()) != f)
        fail(SNN_ERR_FILE_FORMAT, "%s: a scale of %zu and a bias of %zu values for %lld normalised values",
             where(n).c_str(), w.size(), b.size(), (long long)f);
    Out o;
    o.kind = kind;
    o.input = src;
    o.text = "layernorm";
    const std::string eps_t = float_text(attr_f(n, "epsilon", 1e-5));
    if (strtod(eps_t.c_str(), nullptr) != 1e-5) o.text += " eps=" + eps_t;
    o.params = w;
    o.params.insert(o.params.end(), b.begin(), b.end());
    o.canon = outs_[size_t(src)].canon;
    o.primary = id(n.output[0]);
    const int l = emit(o);
    set_view(n.output[0], canonical_view(l));
}

// ReduceMean(x) -> Sub(x, mean) -> Pow(., 2) -> ReduceMean -> Add(eps) ->
// Sqrt -> Div -> [Mul(scale) -> Add(bias)]: layer norm (opsets below 17).
bool Importer::map_layernorm_decomposed(const Node &n, int k) {
    const std::string x = in(n, 0);
    const std::string mean = n.output[0];
    const int sub = sole_consumer(mean);
    if (sub < 0 || node(sub).op_type != "Sub" || in(node(sub), 0) != x || in(node(sub), 1) != mean) return false;
    const std::string d = node(sub).output[0];
    const Value &dv = val(d);
    if (dv.graph_output || dv.consumers.size() != 2) return false;
    int pw = -1, dv_ = -1;
    for (int c : dv.consumers) {
        if (node(c).op_type == "Pow" && in(node(c), 0) == d && scalar(in(node(c), 1)) == 2.0) pw = c;
        else if (node(c).op_type == "Div" && in(node(c), 0) == d) dv_ = c;
    }
    if (pw < 0 || dv_ < 0) return false;
    const int m2 = sole_consumer(node(pw).output[0]);
    if (m2 < 0 || node(m2).op_type != "ReduceMean") return false;
    const int add = sole_consumer(node(m2).output[0]);
    if (add < 0 || node(add).op_type != "Add") return false;
    const double eps = scalar(other_input(node(add), node(m2).output[0]));
    if (!(eps > 0)) return false;
    const int sq = sole_consumer(node(add).output[0]);
    if (sq < 0 || node(sq).op_type != "Sqrt" || in(node(dv_), 1) != node(sq).output[0]) return false;
    const Value &xv = val(x);
    if (!xv.has_shape) return false;
    const size_t r = xv.shape.size();
    auto axes_ok = [&](const Node &m) {
        std::vector<int64_t> axes;
        try {
            axes = axes_of(m, 1, r);
        } catch (const Refusal &) {
            return false;
        }
        return axes == std::vector<int64_t>{int64_t(r - 1)} && attr_i(m, "keepdims", 1) == 1;
    };
    if (!axes_ok(n) || !axes_ok(node(m2))) return false;
    std::vector<int> group = {k, sub, pw, m2, add, sq, dv_};
    std::string result = node(dv_).output[0];
    const int64_t f = concrete(xv.shape.back(), "the normalised shape");
    // The features of the layer's output, not only of the shape inferred
    // (allocated below).
    const View v = view_of(x);
    int64_t features = 1;
    for (int a : leaves_of(v.dims.back())) features = size_mul(features, atom_size_[size_t(a)]);
    if (features != f) return false;
    std::vector<float> w(size_t(f), 1.0f), b(size_t(f), 0.0f);
    int mul = sole_consumer(result);
    if (mul >= 0 && node(mul).op_type == "Mul") {
        const std::string s = other_input(node(mul), result);
        if (!s.empty() && val(s).c && val(s).c->count() == f) {
            w = floats(s, "the scale");
            group.push_back(mul);
            result = node(mul).output[0];
            const int ad = sole_consumer(result);
            if (ad >= 0 && node(ad).op_type == "Add") {
                const std::string bb = other_input(node(ad), result);
                if (!bb.empty() && val(bb).c && val(bb).c->count() == f) {
                    b = floats(bb, "the bias");
                    group.push_back(ad);
                    result = node(ad).output[0];
                }
            }
        }
    }
    const Out::Kind kind = outs_[size_t(v.layer)].kind == Out::seq ? Out::seq : Out::vector;
    if (kind == Out::vector && r != 2) return false;
    const int src = materialize(v, kind, "the layer norm");
    Out o;
    o.kind = kind;
    o.input = src;
    o.text = "layernorm";
    const std::string eps_t = float_text(eps);
    if (strtod(eps_t.c_str(), nullptr) != 1e-5) o.text += " eps=" + eps_t;
    o.params = w;
    o.params.insert(o.params.end(), b.begin(), b.end());
    o.canon = outs_[size_t(src)].canon;
    o.primary = id(result);
    const int l = emit(o);
    for (int g : group) done_[size_t(g)] = true;
    set_view(result, canonical_view(l));
    return true;
}

void Importer::map_reduce(const Node &n, int k) {
    if (n.op_type == "ReduceMean" && map_layernorm_decomposed(n, k)) return;
    const View pv = padded_view_of(in(n, 0));
    if (pv.padded) return map_reduce_valid(n, pv);
    if (n.op_type == "ReduceSum") refuse("snn has no layer that computes ReduceSum");
    const View v = pv;
    const Out &l0 = outs_[size_t(v.layer)];
    const std::vector<int64_t> axes = axes_of(n, 1, v.dims.size());
    const bool keep = attr_i(n, "keepdims", 1) != 0;
    if (l0.kind == Out::image && v.dims.size() == 4 && axes == std::vector<int64_t>{2, 3} && n.op_type == "ReduceMean") {
        const int src = materialize(v, Out::image, n.op_type.c_str());
        Out p;
        p.kind = Out::image;
        p.input = src;
        p.text = "globalavgpool";
        p.canon = {{0}, outs_[size_t(src)].canon[1], {}, {}};
        p.primary = keep ? id(n.output[0]) : -1;
        const int l = emit(p);
        set_view(n.output[0], keep ? canonical_view(l) : View{l, {{0}, outs_[size_t(l)].canon[1]}});
        return;
    }
    if (l0.kind == Out::seq && v.dims.size() == 3 && axes == std::vector<int64_t>{1}) {
        refuse_ignoring_lengths(format("%s over every step", n.op_type.c_str()),
                                "seqpool pools each sample's valid steps only");
        const int src = materialize(v, Out::seq, n.op_type.c_str());
        Out p;
        p.kind = Out::vector;
        p.input = src;
        p.text = n.op_type == "ReduceMean" ? "seqpool mean" : "seqpool max";
        p.canon = {{0}, outs_[size_t(src)].canon[2]};
        p.primary = keep ? -1 : id(n.output[0]);
        const int l = emit(p);
        set_view(n.output[0], keep ? View{l, {{0}, {}, outs_[size_t(l)].canon[1]}} : canonical_view(l));
        return;
    }
    refuse("reduces axes " + ints_text(axes) + "; snn reduces the height and width of an image (global average "
           "pool) or the steps of a sequence (seqpool)");
}

// seqpool over each sample's valid steps: ReduceMax of the sequence with
// padded steps -inf (max), or ReduceSum of it with padded steps 0, divided
// by the lengths (mean).
void Importer::map_reduce_valid(const Node &n, const View &v) {
    const Out &l0 = outs_[size_t(v.layer)];
    const std::vector<int64_t> axes = axes_of(n, 1, v.dims.size());
    if (l0.kind != Out::seq || v.dims.size() != 3 || !is_canonical(v) || axes != std::vector<int64_t>{1} ||
        attr_i(n, "keepdims", 1) != 0)
        refuse("reduces a sequence whose padded steps are set from 'lengths' other than over its steps "
               "(axes [1], keepdims=0), as seqpool does");
    Out p;
    p.kind = Out::vector;
    p.input = v.layer;
    p.canon = {{0}, l0.canon[2]};
    std::string y = n.output[0];
    if (n.op_type == "ReduceMax") {
        if (v.padded != kPadMinusInf)
            refuse("takes the max over steps whose padding is 0; seqpool max leaves padded steps out (-inf)");
        p.text = "seqpool max";
    } else if (n.op_type == "ReduceSum") {
        if (v.padded != kPadZero) refuse("sums steps whose padding is not 0");
        const int d = sole_consumer(y);
        if (d < 0 || node(d).op_type != "Div" || node(d).input.size() != 2 || in(node(d), 0) != y ||
            val(in(node(d), 1)).len != kLenFloat)
            refuse("sums the valid steps without dividing the sum by 'lengths' (seqpool mean)");
        done_[size_t(d)] = true;
        y = node(d).output[0];
        p.text = "seqpool mean";
    } else {
        refuse("averages over every step, padding included, of a sequence whose padded steps are set from "
               "'lengths' (seqpool mean divides the sum of the valid steps by the length)");
    }
    p.primary = id(y);
    const int l = emit(p);
    set_view(y, canonical_view(l));
}

// Where(step < length, x, fill): a sequence with its padded steps replaced,
// read by conv1d (fill 0) and seqpool (0 for mean, -inf for max).
void Importer::map_where(const Node &n) {
    if (n.input.size() != 3 || val(in(n, 0)).len == kNotLen) refuse("snn has no layer that computes Where");
    if (val(in(n, 0)).len != kValidSteps || val(in(n, 1)).len != kNotLen || val(in(n, 2)).len != kNotLen)
        refuse(kLengthsUses);
    const View v = view_of(in(n, 1));
    const Out &l0 = outs_[size_t(v.layer)];
    const Dims &xs = shape(in(n, 1));
    if (l0.kind != Out::seq || !is_canonical(v) || xs.size() != 3 || xs[1] != num(steps_))
        refuse("sets the padded steps of a value that is not a sequence of the input's steps in snn's layout");
    const Value &f = val(in(n, 2));
    const double fill = scalar(in(n, 2));
    View o = v;
    if (f.c && !f.c->is_int && fill == 0.0) o.padded = kPadZero;
    else if (f.c && !f.c->is_int && isinf(fill) && fill < 0) o.padded = kPadMinusInf;
    else refuse("sets padded steps to a value other than 0 (conv1d, seqpool mean) or -inf (seqpool max)");
    if (shape(n.output[0]) != xs) refuse("broadcasts the sequence to another shape");
    set_view(n.output[0], o);
}

// GatherND(x, lengths - 1, batch_dims=1): each sample's last valid step.
void Importer::map_gather_nd(const Node &n) {
    if (n.input.size() != 2 || val(in(n, 1)).len != kLenLast || val(in(n, 0)).len != kNotLen) {
        if (reads_lengths(n)) refuse(kLengthsUses);
        refuse("snn has no layer that computes GatherND");
    }
    if (attr_i(n, "batch_dims", 0) != 1) refuse("gathers the steps at lengths - 1 with batch_dims other than 1");
    const View v = view_of(in(n, 0));
    const Dims &xs = shape(in(n, 0));
    if (xs.size() != 3 || xs[1] != num(steps_))
        refuse("takes the step at lengths - 1 of a value that is not a sequence of the input's steps");
    const int l = seqpool_last(v, 1, false);
    set_view(n.output[0], canonical_view(l));
}

void Importer::map_add(const Node &n) {
    if (n.input.size() != 2) refuse("an Add without two inputs");
    const Value &a = val(in(n, 0)), &b = val(in(n, 1));
    if (a.c && b.c) refuse("adds two constants");
    if (a.c || b.c) {
        // A constant [T, F] (or [1, T, F]) added to a sequence: a positional embedding.
        const std::string x = a.c ? in(n, 1) : in(n, 0), w = a.c ? in(n, 0) : in(n, 1);
        const View v = view_of(x);
        const Out &l0 = outs_[size_t(v.layer)];
        std::vector<int64_t> wd = const_dims(w);
        while (wd.size() > 2 && wd[0] == 1) wd.erase(wd.begin());
        const Dims &xs = shape(x);
        if (l0.kind != Out::seq || !is_canonical(v) || wd.size() != 2 || xs.size() != 3 || num(wd[0]) != xs[1] ||
            num(wd[1]) != xs[2])
            refuse("adds a constant to a layer's output (only a dense or convolution bias, or a [T, F] positional "
                   "embedding on a sequence, is mapped)");
        Out p;
        p.kind = Out::seq;
        p.input = v.layer;
        p.text = "posembed";
        p.params = floats(w, "the positional embedding");
        p.canon = l0.canon;
        p.primary = id(n.output[0]);
        const int l = emit(p);
        set_view(n.output[0], canonical_view(l));
        return;
    }
    const View va = view_of(in(n, 0)), vb = view_of(in(n, 1));
    const Out::Kind ka = outs_[size_t(va.layer)].kind, kb = outs_[size_t(vb.layer)].kind;
    if (!a.has_shape || !b.has_shape || a.shape != b.shape)
        refuse("adds values of different shapes " + dims_text(a.shape) + " and " + dims_text(b.shape) +
               " (snn's add takes equal shapes)");
    int la = materialize(va, ka, "Add"), lb = materialize(vb, kb, "Add");
    if (outs_[size_t(la)].kind != outs_[size_t(lb)].kind) refuse("adds an image to a vector");
    // The previous layer reads first (no from= needed).
    if (lb == int(outs_.size()) - 1 && la != lb) std::swap(la, lb);
    Out o;
    o.kind = outs_[size_t(la)].kind;
    o.input = la;
    o.other = lb;
    o.text = "add";
    o.canon = outs_[size_t(la)].canon;
    o.primary = id(n.output[0]);
    const int l = emit(o);
    set_view(n.output[0], canonical_view(l));
}

void Importer::map_concat(const Node &n) {
    if (n.input.size() < 2) refuse("a Concat of fewer than two values");
    const Value &first = val(in(n, 0));
    if (!first.has_shape) refuse("the shape of its input is not known");
    const int64_t axis = norm_axis(attr_i(n, "axis", 0), first.shape.size());
    if (axis != 1) refuse(format("joins along axis %lld; snn's concat joins channels of images or features of "
                                 "vectors (axis 1)", (long long)axis));
    int cur = -1;
    std::vector<int> canon_atoms;
    for (size_t k = 0; k < n.input.size(); ++k) {
        const View v = view_of(in(n, k));
        if (v.dims.size() != 4 && v.dims.size() != 2) refuse("joins values that are not images or vectors");
        const Out::Kind kind = v.dims.size() == 4 ? Out::image : Out::vector;
        const int l = materialize(v, kind, "Concat");
        if (cur < 0) {
            cur = l;
            continue;
        }
        if (outs_[size_t(cur)].kind != outs_[size_t(l)].kind) refuse("joins an image and a vector");
        Out o;
        o.kind = outs_[size_t(cur)].kind;
        o.input = cur;
        o.other = l;
        o.text = "concat";
        int64_t c = 0;
        for (size_t q = 0; q <= k; ++q)
            if (__builtin_add_overflow(c, concrete(shape(in(n, q))[1], "the channels"), &c) || c > INT32_MAX)
                refuse("joins more than 2^31 channels or features");
        o.canon = outs_[size_t(cur)].canon;
        o.canon[1] = atoms_for(c);
        o.primary = k + 1 == n.input.size() ? id(n.output[0]) : -1;
        cur = emit(o);
    }
    set_view(n.output[0], canonical_view(cur));
}

// seqpool last over axis `axis` of v (a sequence's steps); keep: the axis
// stays as 1.
int Importer::seqpool_last(const View &v, int axis, bool keep) {
    const Out &l0 = outs_[size_t(v.layer)];
    if (l0.kind != Out::seq || !is_canonical(v) || axis != 1)
        refuse("takes one step of a value that is not a sequence in snn's layout");
    Out p;
    p.kind = Out::vector;
    p.input = v.layer;
    p.text = "seqpool last";
    p.canon = {{0}, l0.canon[2]};
    const int l = emit(p);
    (void)keep;
    return l;
}

void Importer::map_gather(const Node &n) {
    const Value &data = val(in(n, 0));
    const Value &idx = val(in(n, 1));
    if (data.c) {
        // An embedding: rows of a constant [V, D] picked by the token ids.
        if (attr_i(n, "axis", 0) != 0) refuse("gathers a constant along an axis other than 0");
        const View v = view_of(in(n, 1));
        const Out &l0 = outs_[size_t(v.layer)];
        if (l0.kind != Out::tokens || !is_canonical(v)) refuse("looks up a constant with indices that are not the token ids input");
        if (data.c->dims.size() != 2) refuse("an embedding table that is not [V, D]");
        const int64_t vocab = data.c->dims[0], dim = data.c->dims[1];
        if (vocab_ && vocab_ != vocab) refuse("a second embedding with another vocabulary");
        if (vocab > (int64_t(1) << 24)) refuse("a vocabulary above 2^24");
        vocab_ = vocab;
        Out e;
        e.kind = Out::seq;
        e.input = v.layer;
        e.text = format("embedding %lld", (long long)dim);
        e.params = floats(in(n, 0), "the embedding");
        e.canon = {{0}, l0.canon[1], atoms_for(dim)};
        e.primary = id(n.output[0]);
        const int l = emit(e);
        set_view(n.output[0], canonical_view(l));
        return;
    }
    const View v = view_of(in(n, 0));
    if (!idx.c || idx.c->count() != 1 || !idx.c->dims.empty()) refuse("gathers with indices that are not one constant");
    const int64_t axis = norm_axis(attr_i(n, "axis", 0), v.dims.size());
    int64_t at = idx.c->int_at(0);
    const Dims &s = shape(in(n, 0));
    const Sym len = s[size_t(axis)];
    if (v.dims[size_t(axis)].empty() && (at == 0 || at == -1)) {
        View o = v;
        o.dims.erase(o.dims.begin() + axis);
        set_view(n.output[0], o);
        return;
    }
    if (len.concrete() && (at == -1 || at == len.b - 1)) {
        refuse_ignoring_lengths("taking the last of every step", "seqpool last takes the step at each sample's length - 1");
        const int l = seqpool_last(v, int(axis), false);
        set_view(n.output[0], canonical_view(l));
        return;
    }
    (void)at;
    refuse("picks one entry of an axis of a layer's output (snn can take the last step of a sequence only)");
}

void Importer::map_slice(const Node &n) {
    const View v = view_of(in(n, 0));
    const Dims &s = shape(in(n, 0)), &os = shape(n.output[0]);
    if (s == os) {
        set_view(n.output[0], v);
        return;
    }
    size_t changed = 0, count = 0;
    for (size_t d = 0; d < s.size(); ++d)
        if (s[d] != os[d]) changed = d, ++count;
    if (count == 1 && os[changed] == num(1)) {
        const std::vector<int64_t> st = const_ints(in(n, 1), "starts");
        const int64_t len = s[changed].b;
        bool last = false;
        for (int64_t q : st) last |= q == -1 || q == len - 1;
        if (last) {
            refuse_ignoring_lengths("taking the last of every step",
                                    "seqpool last takes the step at each sample's length - 1");
            const int l = seqpool_last(v, int(changed), true);
            set_view(n.output[0], View{l, {{0}, {}, outs_[size_t(l)].canon[1]}});
            return;
        }
    }
    refuse("keeps part of a layer's output (snn can take the last step of a sequence only)");
}

void Importer::map_layout(const Node &n) {
    const std::string &op = n.op_type;
    // Axis moves keep a sequence's padded steps as they were set (conv1d's
    // input is transposed after); a reshape does not.
    const View v = op == "Flatten" || op == "Reshape" ? view_of(in(n, 0)) : padded_view_of(in(n, 0));
    View o = v;
    const size_t r = v.dims.size();
    if (op == "Identity") {
    } else if (op == "Transpose") {
        std::vector<int64_t> perm = attr_ints(n, "perm");
        if (perm.empty())
            for (size_t d = 0; d < r; ++d) perm.push_back(int64_t(r - 1 - d));
        if (!is_permutation_of(perm, r))
            fail(SNN_ERR_FILE_FORMAT, "%s: perm %s is not a permutation of %zu axes", where(n).c_str(),
                 ints_text(perm).c_str(), r);
        o.dims.clear();
        for (int64_t p : perm) o.dims.push_back(v.dims[size_t(p)]);
    } else if (op == "Squeeze") {
        std::vector<int64_t> axes = axes_of(n, 1, r);
        o.dims.clear();
        for (size_t d = 0; d < r; ++d) {
            const bool drop = axes.empty() ? v.dims[d].empty() : std::count(axes.begin(), axes.end(), int64_t(d)) > 0;
            if (drop && !v.dims[d].empty()) refuse("squeezes an axis that is not of size 1");
            if (!drop) o.dims.push_back(v.dims[d]);
        }
    } else if (op == "Unsqueeze") {
        std::vector<int64_t> axes = attr_ints(n, "axes");
        if (has_in(n, 1)) axes = const_ints(in(n, 1), "axes");
        const size_t nr = r + axes.size();
        for (int64_t &a : axes) a = norm_axis(a, nr);
        std::sort(axes.begin(), axes.end());
        if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
            fail(SNN_ERR_FILE_FORMAT, "%s: an axis given twice", where(n).c_str());
        for (int64_t a : axes) o.dims.insert(o.dims.begin() + a, std::vector<int>{});
    } else if (op == "Flatten" || op == "Reshape") {
        Dims target;
        if (op == "Flatten") {
            const int64_t axis = attr_i(n, "axis", 1) < 0 ? attr_i(n, "axis", 1) + int64_t(r) : attr_i(n, "axis", 1);
            if (axis != 1) refuse("flattens from an axis other than 1 (snn keeps the batch apart)");
            target = shape(n.output[0]);
        } else {
            const Value &t = val(in(n, 1));
            if (!t.c) refuse("a new shape that is computed from values, not shapes");
            if (attr_i(n, "allowzero", 0)) refuse("allowzero=1");
            if (!t.c->is_int) fail(SNN_ERR_FILE_FORMAT, "%s: a shape of floats (Reshape's is int64)", where(n).c_str());
            const Dims &is = shape(in(n, 0));
            for (int64_t k = 0; k < t.c->count(); ++k) {
                Sym q = t.c->i[size_t(k)];
                if (q == num(0)) {
                    if (size_t(k) >= is.size())
                        fail(SNN_ERR_FILE_FORMAT, "%s: a 0 in the new shape copies axis %lld, which the input lacks",
                             where(n).c_str(), (long long)k);
                    q = is[size_t(k)];
                }
                target.push_back(q);
            }
        }
        o = reshape_view(v, target);
        // A flatten of an image or a sequence is a layer where it is written.
        if (o.dims.size() == 2 && outs_[size_t(v.layer)].kind != Out::vector) {
            try {
                const int l = materialize(o, Out::vector, n.op_type.c_str());
                o = canonical_view(l);
            } catch (const Refusal &) {
            }
        }
    }
    // The value a fused activation may follow moves through axis moves.
    Out &src = outs_[size_t(v.layer)];
    if (o.layer == v.layer && src.primary == id(in(n, 0)) && sole_consumer(in(n, 0)) >= 0 &&
        &node(sole_consumer(in(n, 0))) == &n)
        src.primary = id(n.output[0]);
    set_view(n.output[0], o);
}

void Importer::map_dropout(const Node &n) {
    const View v = view_of(in(n, 0));
    if (n.output.size() > 1 && !n.output[1].empty() && !val(n.output[1]).consumers.empty())
        refuse("its mask output is read");
    double ratio = attr_f(n, "ratio", 0.5);
    if (has_in(n, 1)) ratio = scalar(in(n, 1));
    if (has_in(n, 2) && scalar(in(n, 2)) != 0.0) refuse("training_mode is on in the file");
    if (!(ratio >= 0 && ratio < 1)) refuse("a ratio that is not a constant in [0, 1)");
    if (ratio == 0.0) {
        set_view(n.output[0], v);
        return;
    }
    Out d;
    d.kind = outs_[size_t(v.layer)].kind;
    d.input = v.layer;
    d.text = "dropout " + float_text(ratio);
    d.canon = outs_[size_t(v.layer)].canon;
    d.primary = -1;
    const int l = emit(d);
    set_view(n.output[0], View{l, v.dims});
}

void Importer::map_softmax(const Node &n) {
    const View v = view_of(in(n, 0));
    const Out &l0 = outs_[size_t(v.layer)];
    const size_t r = v.dims.size();
    int64_t axis = attr_i(n, "axis", opset_ >= 13 ? -1 : 1);
    axis = norm_axis(axis, r);
    if (opset_ < 13 && axis != int64_t(r) - 1) refuse("a Softmax over flattened axes (opset below 13)");
    const Out::Kind kind = l0.kind;
    const bool ok = (kind == Out::vector && r == 2 && axis == 1) || (kind == Out::image && r == 4 && axis == 1) ||
                    (kind == Out::seq && r == 3 && axis == 2);
    if (!ok || !is_canonical(v))
        refuse(format("softmax over axis %lld of a %zu-axis value; snn's softmax takes the features of a vector or "
                      "a sequence's step, or the channels of an image", (long long)axis, r));
    Out s;
    s.kind = kind;
    s.input = v.layer;
    s.text = "softmax";
    s.canon = l0.canon;
    s.primary = id(n.output[0]);
    const int l = emit(s);
    set_view(n.output[0], canonical_view(l));
}

// Div(x, sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5), in either order of
// the operands of each (torch's GELU); or Mul(x, 1/sqrt 2) first.
bool Importer::map_gelu(const Node &n, int k) {
    if (n.input.size() != 2) return false;
    const std::string x = in(n, 0);
    const double c = scalar(in(n, 1));
    const bool div = n.op_type == "Div" && fabs(c - sqrt(2.0)) < 1e-6;
    const bool mul = n.op_type == "Mul" && fabs(c - sqrt(0.5)) < 1e-6;
    if (!div && !mul) return false;
    const int erf = sole_consumer(n.output[0]);
    if (erf < 0 || node(erf).op_type != "Erf") return false;
    const int add = sole_consumer(node(erf).output[0]);
    if (add < 0 || node(add).op_type != "Add" || scalar(other_input(node(add), node(erf).output[0])) != 1.0) return false;
    const int m1 = sole_consumer(node(add).output[0]);
    if (m1 < 0 || node(m1).op_type != "Mul") return false;
    const std::string o1 = other_input(node(m1), node(add).output[0]);
    std::vector<int> group = {k, erf, add, m1};
    std::string result;
    if (o1 == x) {
        const int m2 = sole_consumer(node(m1).output[0]);
        if (m2 < 0 || node(m2).op_type != "Mul" || scalar(other_input(node(m2), node(m1).output[0])) != 0.5) return false;
        group.push_back(m2);
        result = node(m2).output[0];
    } else {
        // (x * 0.5) * (1 + erf)
        const Value &h = val(o1);
        if (h.producer < 0) return false;
        const Node &hn = node(h.producer);
        if (hn.op_type != "Mul" || other_input(hn, x).empty() || scalar(other_input(hn, x)) != 0.5) return false;
        if (sole_consumer(o1) != m1) return false;
        group.push_back(h.producer);
        result = node(m1).output[0];
    }
    if (val(x).c) return false;
    activation(n, Act::gelu, group, x, result);
    for (int g : group) done_[size_t(g)] = true;
    return true;
}

// LSTM / GRU: one layer, zero initial state, PyTorch's gate order.
void Importer::map_recurrent(const Node &n, bool lstm) {
    const char *name = lstm ? "lstm" : "gru";
    const std::string dir = attr_s(n, "direction", "forward");
    if (dir != "forward" && dir != "bidirectional") refuse("direction=" + dir + " (snn runs forward, or both directions)");
    const int64_t dirs = dir == "bidirectional" ? 2 : 1;
    if (attr_i(n, "layout", 0) != 0) refuse("layout=1");
    if (n.attr("clip")) refuse("a cell clip");
    if (lstm && attr_i(n, "input_forget", 0)) refuse("input_forget=1");
    if (!lstm && attr_i(n, "linear_before_reset", 0) != 1)
        refuse("linear_before_reset=0; snn's gru is PyTorch's (linear_before_reset=1)");
    const Attribute *acts = n.attr("activations");
    if (acts) {
        const std::vector<std::string> want = lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                                   : std::vector<std::string>{"Sigmoid", "Tanh"};
        for (size_t q = 0; q < acts->strings.size(); ++q)
            if (acts->strings[q] != want[q % want.size()]) refuse("activations other than the default");
    }
    const int64_t H = attr_i(n, "hidden_size", 0);
    const int64_t G = lstm ? 4 : 3;
    if (has_in(n, 4) && id(in(n, 4)) != lengths_value_) refuse("sequence_lens that are not the 'lengths' input");
    if (!has_in(n, 4))
        refuse_ignoring_lengths(std::string("without sequence_lens, the ") + name,
                                "its outputs are 0 past each sample's length and its last state is the one at length - 1");
    for (size_t q = 5; q < n.input.size(); ++q) {
        if (!has_in(n, q)) continue;
        if (q == 7) refuse("peephole weights (P)");
        const Value &s0 = val(in(n, q));
        bool zero = s0.zeros;
        if (s0.c) {
            zero = true;
            for (int64_t e = 0; e < s0.c->count(); ++e) zero &= s0.c->at(e) == 0.0;
        }
        if (!zero) refuse("an initial state that is not zero");
    }
    const View v = view_of(in(n, 0));
    const Out &l0 = outs_[size_t(v.layer)];
    if (l0.kind != Out::seq || !same_dims(v.dims, {l0.canon[1], l0.canon[0], l0.canon[2]}))
        refuse("its input is not a sequence with its time axis first ([T, batch, F] of a [batch, T, F] value)");
    int64_t F = 1;
    for (int a : leaves_of(l0.canon[2])) F = size_mul(F, atom_size_[size_t(a)]);
    const std::vector<int64_t> wd = const_dims(in(n, 1)), rd = const_dims(in(n, 2));
    if (wd != std::vector<int64_t>{dirs, G * H, F} || rd != std::vector<int64_t>{dirs, G * H, H})
        fail(SNN_ERR_FILE_FORMAT, "%s: W %s and R %s do not fit %lld directions of %lld hidden units over %lld features",
             where(n).c_str(), ints_text(wd).c_str(), ints_text(rd).c_str(), (long long)dirs, (long long)H, (long long)F);
    const std::vector<float> W = floats(in(n, 1), "W"), R = floats(in(n, 2), "R");
    std::vector<float> B;
    if (has_in(n, 3)) {
        B = floats(in(n, 3), "B");
        if (const_dims(in(n, 3)) != std::vector<int64_t>{dirs, 2 * G * H})
            fail(SNN_ERR_FILE_FORMAT, "%s: B %s does not fit", where(n).c_str(), ints_text(const_dims(in(n, 3))).c_str());
    }
    // ONNX gates i, o, f, c (LSTM) and z, r, h (GRU) -> PyTorch i, f, g, o and r, z, n.
    const std::vector<int64_t> from = lstm ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{1, 0, 2};
    auto gates = [&](const float *src, int64_t cols, std::vector<float> *dst) {
        for (int64_t g : from) dst->insert(dst->end(), src + g * H * cols, src + (g + 1) * H * cols);
    };
    Out o;
    o.input = v.layer;
    for (int64_t d = 0; d < dirs; ++d) {
        gates(W.data() + d * G * H * F, F, &o.params);
        gates(R.data() + d * G * H * H, H, &o.params);
        if (!B.empty()) {
            gates(B.data() + d * 2 * G * H, 1, &o.params);
            gates(B.data() + d * 2 * G * H + G * H, 1, &o.params);
        }
    }
    auto used = [&](size_t k) {
        if (k >= n.output.size() || n.output[k].empty()) return false;
        const Value &o = val(n.output[k]);
        return o.graph_output || !o.consumers.empty();
    };
    const bool y_used = used(0), h_used = used(1);
    if (lstm && used(2))
        refuse("the final cell state (Y_c) is read; snn's lstm gives the hidden states");
    if (y_used && h_used && dirs == 2) refuse("both the hidden states and the final state of a bidirectional layer are read");
    o.text = format("%s %lld", name, (long long)H);
    if (dirs == 2) o.text += " bidirectional";
    if (B.empty()) o.text += " nobias";
    const std::vector<int> datom = atoms_for(dirs), hatom = atoms_for(H);
    std::vector<int> feat = datom;
    feat.insert(feat.end(), hatom.begin(), hatom.end());
    if (y_used) {
        o.kind = Out::seq;
        o.canon = {{0}, l0.canon[1], feat};
        o.zero_padded = has_in(n, 4);
        const int l = emit(o);
        // Y [T, dirs, batch, H]
        set_view(n.output[0], View{l, {l0.canon[1], datom, {0}, hatom}});
        if (h_used) {
            const int p = seqpool_last(canonical_view(l), 1, false);
            set_view(n.output[1], View{p, {{}, {0}, outs_[size_t(p)].canon[1]}});
        }
        return;
    }
    if (!h_used) refuse("no output is read");
    o.kind = Out::vector;
    o.text = format("%s %lld", name, (long long)H) + (dirs == 2 ? " bidirectional" : "") + " last" +
             (B.empty() ? " nobias" : "");
    o.canon = {{0}, feat};
    const int l = emit(o);
    // Y_h [dirs, batch, H]
    set_view(n.output[1], View{l, {datom, {0}, hatom}});
}

// ---- attention -------------------------------------------------------------

// The nodes of one self-attention (nn.MultiheadAttention): from its input x
// through the in-projection, the heads' scores, the Softmax, the context and
// the out-projection to its output y.
struct Importer::Region {
    std::string x, y;
    std::set<int> nodes;
    int64_t E = 0, heads = 0;
    bool causal = false;
    bool key_mask = false;      // the scores' keys masked from 'lengths'
    std::vector<float> params;  // in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias
    bool mapped = false;
};

namespace {
const std::set<std::string> kLayoutOps = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Dropout",
                                          "Cast", "Flatten"};
}

void Importer::find_attention() {
    region_of_.assign(g_.node.size(), -1);
    for (int k : order_) {
        if (!live_[size_t(k)] || node(k).op_type != "Softmax") continue;
        auto r = std::make_unique<Region>();
        std::string why;
        bool ok = false;
        try {
            ok = match_attention(k, r.get(), &why);
        } catch (const Refusal &e) {
            why = e.why;
        }
        if (!ok) continue;  // its nodes are then mapped (or refused) one by one
        const int idx = int(regions_.size());
        for (int q : r->nodes) region_of_[size_t(q)] = idx;
        regions_.push_back(std::move(r));
    }
}

bool Importer::match_attention(int sm, Region *r, std::string *why) {
    const Node &s = node(sm);
    // Forward: Softmax -> [Dropout/Identity/Cast] -> MatMul(P, V).
    std::string p = s.output[0];
    std::vector<int> path;
    auto follow = [&](std::string *v, std::vector<int> *nodes) {
        for (;;) {
            const int c = sole_consumer(*v);
            if (c < 0 || !kLayoutOps.count(node(c).op_type)) return c;
            nodes->push_back(c);
            *v = node(c).output[0];
        }
    };
    int pv = follow(&p, &path);
    if (pv < 0 || node(pv).op_type != "MatMul" || in(node(pv), 0) != p) return false;
    // Backward from the scores: [Add(mask)] <- [Mul/Div scale] <- MatMul(Q, K^T).
    std::string sc = in(s, 0);
    double scale = 1.0;
    const Const *mask = nullptr;
    bool key_mask = false;  // -inf at each sample's padded keys, from "lengths"
    std::set<int> nodes = {sm, pv};
    nodes.insert(path.begin(), path.end());
    int qk = -1;
    for (int guard = 0; guard < 16; ++guard) {
        const Value &v = val(sc);
        if (v.producer < 0) return false;
        const Node &pn = node(v.producer);
        nodes.insert(v.producer);
        if (pn.op_type == "MatMul" && !val(in(pn, 0)).c && !val(in(pn, 1)).c) {
            qk = v.producer;
            break;
        }
        if (pn.op_type == "Add" && pn.input.size() == 2 &&
            (val(in(pn, 0)).len == kKeyMask || val(in(pn, 1)).len == kKeyMask)) {
            const int li = val(in(pn, 0)).len == kKeyMask ? 0 : 1;
            if (key_mask || val(in(pn, size_t(1 - li))).len != kNotLen) return false;
            key_mask = true;
            sc = in(pn, size_t(1 - li));
            continue;
        }
        if (pn.op_type == "Add" && pn.input.size() == 2) {
            const int ci = val(in(pn, 0)).c ? 0 : val(in(pn, 1)).c ? 1 : -1;
            if (ci < 0 || mask) return false;
            mask = val(in(pn, size_t(ci))).c.get();
            sc = in(pn, size_t(1 - ci));
            continue;
        }
        if ((pn.op_type == "Mul" || pn.op_type == "Div") && pn.input.size() == 2 && val(in(pn, 1)).c &&
            val(in(pn, 1)).c->count() == 1) {
            const double c = val(in(pn, 1)).c->at(0);
            scale *= pn.op_type == "Mul" ? c : 1.0 / c;
            sc = in(pn, 0);
            continue;
        }
        if (kLayoutOps.count(pn.op_type)) {
            sc = in(pn, 0);
            continue;
        }
        return false;
    }
    if (qk < 0) return false;
    // Each of Q, K, V back to its projection: layout ops, Gather/Slice of the
    // packed projection, scalar scales; then Add(bias) <- MatMul(x', W) or
    // Gemm; x' a layout view of x.
    struct Branch {
        int proj = -1;            // MatMul or Gemm node
        std::string bias;         // the bias constant, or ""
        int64_t part = -1;        // which third of a packed projection (Gather index), -1 whole
        int64_t slice_lo = -1;    // or a Slice of the projection's features
        double scale = 1.0;
        std::string x;            // the projection's input
    };
    auto trace = [&](std::string v, Branch *b) -> bool {
        for (int guard = 0; guard < 32; ++guard) {
            const Value &val_ = val(v);
            if (val_.producer < 0) return false;
            const int pk = val_.producer;
            const Node &pn = node(pk);
            nodes.insert(pk);
            if (kLayoutOps.count(pn.op_type)) {
                v = in(pn, 0);
                continue;
            }
            if ((pn.op_type == "Mul" || pn.op_type == "Div") && pn.input.size() == 2) {
                const int ci = val(in(pn, 1)).c ? 1 : (pn.op_type == "Mul" && val(in(pn, 0)).c) ? 0 : -1;
                if (ci < 0 || val(in(pn, size_t(ci))).c->count() != 1) return false;
                const double c = val(in(pn, size_t(ci))).c->at(0);
                b->scale *= pn.op_type == "Mul" ? c : 1.0 / c;
                v = in(pn, size_t(1 - ci));
                continue;
            }
            if (pn.op_type == "Gather") {
                const Value &idx = val(in(pn, 1));
                if (!idx.c || idx.c->count() != 1 || b->part >= 0) return false;
                b->part = idx.c->int_at(0);
                v = in(pn, 0);
                continue;
            }
            if (pn.op_type == "Split") {
                // equal parts along the last axis: part k is output k
                if (b->part >= 0) return false;
                const size_t k = size_t(std::find(pn.output.begin(), pn.output.end(), v) - pn.output.begin());
                const Value &src = val(in(pn, 0));
                if (k >= pn.output.size() || !src.has_shape || src.shape.empty()) return false;
                const int64_t axis = attr_i(pn, "axis", 0);
                if (axis != -1 && axis != int64_t(src.shape.size()) - 1) return false;
                const int64_t parts = int64_t(pn.output.size()), total = src.shape.back().b;
                std::vector<int64_t> sizes = attr_ints(pn, "split");
                if (has_in(pn, 1)) sizes = const_ints(in(pn, 1), "split");
                for (int64_t q : sizes) {
                    int64_t all;
                    if (__builtin_mul_overflow(q, parts, &all) || all != total) return false;
                }
                b->slice_lo = int64_t(k) * (total / parts);
                v = in(pn, 0);
                continue;
            }
            if (pn.op_type == "Slice") {
                if (b->slice_lo >= 0) return false;
                const std::vector<int64_t> st = const_ints(in(pn, 1), "starts");
                if (st.size() != 1) return false;
                b->slice_lo = st[0];
                v = in(pn, 0);
                continue;
            }
            if (pn.op_type == "Add" && pn.input.size() == 2) {
                const int ci = val(in(pn, 0)).c ? 0 : val(in(pn, 1)).c ? 1 : -1;
                if (ci < 0 || !b->bias.empty()) return false;
                b->bias = in(pn, size_t(ci));
                v = in(pn, size_t(1 - ci));
                continue;
            }
            if ((pn.op_type == "MatMul" || pn.op_type == "Gemm") && val(in(pn, 1)).c && !val(in(pn, 0)).c) {
                b->proj = pk;
                b->x = in(pn, 0);
                return true;
            }
            return false;
        }
        return false;
    };
    Branch bq, bk, bv;
    if (!trace(in(node(qk), 0), &bq) || !trace(in(node(qk), 1), &bk) || !trace(in(node(pv), 1), &bv)) {
        *why = "the query, key or value does not come from a projection";
        return false;
    }
    // The projections' input: x itself or a layout view of it.
    auto root = [&](std::string v) {
        for (;;) {
            const Value &q = val(v);
            if (q.producer < 0 || q.mapped) return v;
            const Node &pn = node(q.producer);
            if (pn.op_type != "Transpose" && pn.op_type != "Identity") return v;
            nodes.insert(q.producer);
            v = in(pn, 0);
        }
    };
    const std::string x = root(bq.x);
    if (root(bk.x) != x || root(bv.x) != x) {
        *why = "the query, key and value project different inputs (only self-attention is mapped)";
        return false;
    }
    const Value &xv = val(x);
    if (!xv.has_shape || xv.shape.size() != 3) return false;
    const int64_t E = xv.shape[2].b, T = xv.shape[1].b;
    if (!xv.shape[1].concrete() || !xv.shape[2].concrete() || E <= 0 || T <= 0 || E > INT32_MAX) return false;
    // Forward from P V: layout ops to the out-projection, then to y.
    std::string cur = node(pv).output[0];
    std::vector<int> fw;
    int op_ = follow(&cur, &fw);
    nodes.insert(fw.begin(), fw.end());
    if (op_ < 0 || (node(op_).op_type != "MatMul" && node(op_).op_type != "Gemm") || !val(in(node(op_), 1)).c) return false;
    nodes.insert(op_);
    const Node &on = node(op_);
    std::vector<float> wo, bo;
    {
        const std::vector<int64_t> wd = const_dims(in(on, 1));
        if (wd != std::vector<int64_t>{E, E}) return false;
        const std::vector<float> w = floats(in(on, 1), "the out-projection");
        const bool tb = on.op_type == "Gemm" && attr_i(on, "transB", 0);
        for (int64_t o = 0; o < E; ++o)
            for (int64_t i = 0; i < E; ++i) wo.push_back(tb ? w[size_t(o * E + i)] : w[size_t(i * E + o)]);
        cur = on.output[0];
        if (on.op_type == "Gemm" && has_in(on, 2)) bo = floats(in(on, 2), "the out-projection bias");
        else {
            const int a = sole_consumer(cur);
            if (a >= 0 && node(a).op_type == "Add" && !other_input(node(a), cur).empty() &&
                val(other_input(node(a), cur)).c) {
                bo = floats(other_input(node(a), cur), "the out-projection bias");
                nodes.insert(a);
                cur = node(a).output[0];
            }
        }
        if (bo.empty()) bo.assign(size_t(E), 0.0f);
        if (int64_t(bo.size()) != E) return false;
    }
    std::vector<int> tail;
    follow(&cur, &tail);
    nodes.insert(tail.begin(), tail.end());
    const Value &yv = val(cur);
    if (!yv.has_shape || yv.shape != xv.shape) {
        *why = "the attention's output is not laid out as its input";
        return false;
    }
    // Heads: the scores [batch, H, T, T] or [batch*H, T, T].
    const Value &scores = val(node(qk).output[0]);
    if (!scores.has_shape) return false;
    int64_t heads = 0;
    if (scores.shape.size() == 4) heads = scores.shape[1].b;
    else if (scores.shape.size() == 3) heads = scores.shape[0].a ? scores.shape[0].a : scores.shape[0].b / std::max<int64_t>(batch_.b, 1);
    if (heads <= 0 || E % heads) return false;
    // The key mask [batch, 1, 1, T] reaches the scores [batch, H, T queries,
    // T keys] of its own sample, along the keys.
    if (key_mask && (scores.shape.size() != 4 || scores.shape[0] != batch_ || T != steps_ ||
                     scores.shape[2] != num(T) || scores.shape[3] != num(T))) {
        *why = "a mask from 'lengths' on scores that are not [batch, heads, T, T]";
        return false;
    }
    const int64_t hd = E / heads;
    const double want = 1.0 / sqrt(double(hd)), got = scale * bq.scale * bk.scale;
    if (fabs(got - want) > 1e-5 * want || bv.scale != 1.0) {
        *why = format("scales the scores by %g, not 1/sqrt(%lld)", got, (long long)hd);
        return false;
    }
    bool causal = false;
    if (mask) {
        const int64_t mc = mask->count();
        int64_t tt;
        if (mask->is_int || __builtin_mul_overflow(T, T, &tt) || mc != tt) return false;
        bool zero = true, tri = true;
        for (int64_t q = 0; q < mc; ++q) {
            const double m = mask->at(q);
            const int64_t i = q / T, j = q % T;
            zero &= m == 0.0;
            tri &= j > i ? (m <= -1e9) : m == 0.0;
        }
        if (!zero && !tri) {
            *why = "a mask that is neither empty nor causal";
            return false;
        }
        causal = !zero;
    }
    // In-projection weights and biases, per branch.
    std::vector<float> w_in, b_in;
    for (Branch *b : {&bq, &bk, &bv}) {
        const Node &pn = node(b->proj);
        const std::vector<int64_t> wd = const_dims(in(pn, 1));
        const bool tb = pn.op_type == "Gemm" && attr_i(pn, "transB", 0);
        if (wd.size() != 2) return false;
        const int64_t cols = tb ? wd[0] : wd[1];
        if ((tb ? wd[1] : wd[0]) != E || (cols != E && cols != 3 * E)) return false;
        const std::vector<float> w = floats(in(pn, 1), "the in-projection");
        std::string bias = b->bias;
        if (pn.op_type == "Gemm" && has_in(pn, 2)) bias = in(pn, 2);
        std::vector<float> bb = bias.empty() ? std::vector<float>(size_t(cols), 0.0f) : floats(bias, "the in-projection bias");
        if (int64_t(bb.size()) != cols) return false;
        int64_t lo = 0;
        if (cols == 3 * E) {
            // Q, K or V: E of the 3E features, within them
            if (b->part >= 0 && b->part <= 2) lo = b->part * E;
            else if (b->part < 0 && b->slice_lo >= 0 && b->slice_lo <= 2 * E) lo = b->slice_lo;
            else return false;
        }
        for (int64_t o = lo; o < lo + E; ++o)
            for (int64_t i = 0; i < E; ++i) w_in.push_back(tb ? w[size_t(o * E + i)] : w[size_t(i * cols + o)]);
        b_in.insert(b_in.end(), bb.begin() + lo, bb.begin() + lo + E);
    }
    // The packed projection: Q, K, V its thirds in order.
    if (bq.part >= 0 && !(bq.part == 0 && bk.part == 1 && bv.part == 2) && bq.proj == bk.proj) {
        // any order is fine: each branch took its own third above
    }
    // Every node between x and y belongs to the region, and nothing outside
    // reads a value inside it.
    const std::set<int> &region = nodes;
    for (int q : region)
        for (const std::string &o : node(q).output) {
            if (o.empty() || o == cur || val(o).c) continue;
            for (int c : val(o).consumers)
                if (!region.count(c) && live_[size_t(c)] && !folded_node(c)) {
                    *why = "a value inside the attention is read outside it";
                    return false;
                }
        }
    r->x = x;
    r->y = cur;
    r->nodes = region;
    r->E = E;
    r->heads = heads;
    r->causal = causal;
    r->key_mask = key_mask;
    r->params = w_in;
    r->params.insert(r->params.end(), b_in.begin(), b_in.end());
    r->params.insert(r->params.end(), wo.begin(), wo.end());
    r->params.insert(r->params.end(), bo.begin(), bo.end());
    return true;
}

void Importer::map_attention(Region &r) {
    for (int q : r.nodes) done_[size_t(q)] = true;
    if (r.mapped) return;
    r.mapped = true;
    if (!r.key_mask)
        refuse_ignoring_lengths("the attention over '" + r.x + "', masking no keys from 'lengths',",
                                "attention masks the keys past each sample's length");
    const View v = view_of(r.x);
    const int src = materialize(v, Out::seq, "the attention");
    Out a;
    a.kind = Out::seq;
    a.input = src;
    a.text = format("attention heads=%lld", (long long)r.heads) + (r.causal ? " causal" : "");
    a.params = r.params;
    a.canon = outs_[size_t(src)].canon;
    a.primary = id(r.y);
    const int l = emit(a);
    set_view(r.y, canonical_view(l));
}

// ---- 5: the spec -----------------------------------------------------------------

Imported Importer::finish() {
    if (!problems_.empty()) {
        std::string msg = format("%zu node%s of the ONNX graph cannot be mapped onto snn's layers:", problems_.size(),
                                 problems_.size() == 1 ? "" : "s");
        for (const std::string &p : problems_) msg += "\n" + p;
        fail(SNN_ERR_UNSUPPORTED, "%s", msg.c_str());
    }
    const Value &y = values_[size_t(output_value_)];
    if (y.c) fail(SNN_ERR_UNSUPPORTED, "the graph output '%s' is a constant", y.name.c_str());
    if (!y.mapped) fail(SNN_ERR_UNSUPPORTED, "the graph output '%s' is not computed by mapped layers", y.name.c_str());
    int last;
    try {
        const Out &l = outs_[size_t(y.view.layer)];
        last = materialize(y.view, l.kind != Out::vector && y.view.dims.size() == 2 ? Out::vector : l.kind, "the output");
    } catch (const Refusal &r) {
        fail(SNN_ERR_UNSUPPORTED, "the graph output: %s", r.why.c_str());
    }
    if (last != int(outs_.size()) - 1)
        fail(SNN_ERR_UNSUPPORTED, "the graph output is not the last layer computed (a branch after it is not used)");
    if (outs_.size() < 2) fail(SNN_ERR_UNSUPPORTED, "the graph computes nothing from its input");
    if (outs_[0].kind == Out::tokens) {
        if (!vocab_) fail(SNN_ERR_UNSUPPORTED, "the token ids input is not looked up by an embedding");
        outs_[0].text += format(" vocab=%lld", (long long)vocab_);
    }
    for (size_t i = 1; i < outs_.size(); ++i) {
        if (outs_[i].input != int(i) - 1) outs_[size_t(outs_[i].input)].named = true;
        if (outs_[i].other >= 0) outs_[size_t(outs_[i].other)].named = true;
    }
    std::string spec;
    Imported imp;
    for (size_t i = 0; i < outs_.size(); ++i) {
        const Out &o = outs_[i];
        std::string t = o.text;
        if (o.other >= 0) t += format(" l%d", o.other);
        if (o.act != Act::identity) t += std::string(" ") + act_name(o.act);
        if (o.nobias && o.fusable) t += " nobias";
        if (i > 0 && o.input != int(i) - 1) t += format(" from=l%d", o.input);
        if (o.named) t += format(" name=l%zu", i);
        spec += (i ? "; " : "") + t;
        imp.params.insert(imp.params.end(), o.params.begin(), o.params.end());
        imp.state.insert(imp.state.end(), o.state.begin(), o.state.end());
    }
    const Network net = parse_spec(spec);
    if (net.param_count != imp.params.size() || net.state_count != imp.state.size())
        fail(SNN_ERR_INTERNAL, "import built %zu parameters and %zu state values for the spec '%s', which has %zu and %zu",
             imp.params.size(), imp.state.size(), spec.c_str(), net.param_count, net.state_count);
    for (size_t i = 0; i < outs_.size(); ++i) {
        const Layer &l = net.layers[i];
        if (l.weight_count + l.bias_count != outs_[i].params.size())
            fail(SNN_ERR_INTERNAL, "import built %zu parameters for %s, which has %zu", outs_[i].params.size(),
                 layer_label(net, i).c_str(), l.weight_count + l.bias_count);
    }
    imp.spec = describe(net);
    restore_from_metadata(net, imp);
    return imp;
}

namespace {

// The network as its computation: the layers other layers read by name are
// named n<index>, the others not, and what only the creation of a model
// or training reads (initialisers, the embedding's padding row) is reset.
std::string computation(Network net) {
    std::vector<bool> read(net.layers.size(), false);
    for (size_t i = 1; i < net.layers.size(); ++i) {
        const Layer &l = net.layers[i];
        if (!l.inputs.empty() && size_t(l.inputs[0]) != i - 1) read[size_t(l.inputs[0])] = true;
        for (size_t k = 1; k < l.inputs.size(); ++k) read[size_t(l.inputs[k])] = true;
    }
    for (size_t i = 0; i < net.layers.size(); ++i) {
        Layer &l = net.layers[i];
        l.name = read[i] ? format("n%zu", i) : std::string();
        l.init = Init::glorot_uniform;
        l.pad_index = -1;
    }
    return describe(net);
}

}  // namespace

// A file snn wrote keeps its spec in the metadata ("snn.spec", and
// "snn.state_counts": batchnorm's num_batches_tracked): when the graph
// computes exactly that spec, the model gets it back whole, its names, its
// initialisers and its embeddings' padding rows included, which ONNX has no
// place for. Anything else (no metadata, a spec that does not parse, a graph
// edited since) keeps the spec read from the graph.
void Importer::restore_from_metadata(const Network &from_graph, Imported &imp) {
    const std::string *text = m_.metadata("snn.spec");
    if (!text || text->size() > kMaxSpecLength) return;
    Network meta;
    try {
        meta = parse_spec(*text);
    } catch (const Error &) {
        return;
    }
    if (meta.param_count != from_graph.param_count || meta.state_count != from_graph.state_count ||
        computation(meta) != computation(from_graph))
        return;
    imp.spec = describe(meta);
    const std::string *counts = m_.metadata("snn.state_counts");
    if (!counts) return;
    std::vector<std::pair<size_t, float>> values;
    const char *p = counts->c_str();
    for (const Layer &l : meta.layers)
        for (const TensorSlot &t : l.tensors)
            if (t.state && t.int64)
                for (size_t k = 0; k < t.count; ++k) {
                    char *end = nullptr;
                    const double v = strtod(p, &end);
                    // A count is a whole number a float holds exactly (snn_set_state's rule).
                    if (end == p || !(v >= 0.0 && v <= 16777216.0) || v != double(int64_t(v))) return;
                    values.push_back({t.offset + k, float(v)});
                    p = *end == ',' ? end + 1 : end;
                }
    if (*p != '\0') return;
    for (const auto &v : values) imp.state[v.first] = v.second;
}

Imported Importer::run() {
    build_graph();
    sort_nodes();
    map_nodes();
    return finish();
}

}  // namespace

Imported import_model(const unsigned char *bytes, size_t size, const ImportOptions &options) {
    const Model m = read_model(bytes, size);
    // Every ONNX model declares its IR version and the opset of its standard
    // ops (the checker requires both): bytes without them are no ONNX file,
    // whatever else they parse as.
    if (m.ir_version <= 0)
        fail(SNN_ERR_FILE_FORMAT, "ONNX: not an ONNX model: ModelProto.ir_version is %s",
             m.ir_version == 0 ? "missing" : "negative");
    if (m.opset() <= 0)
        fail(SNN_ERR_FILE_FORMAT, "ONNX: not an ONNX model: no opset_import of the standard domain (\"\" or ai.onnx)");
    Importer imp(m, options);
    return imp.run();
}

}  // namespace onnx
}  // namespace snn
