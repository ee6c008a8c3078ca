// Textual model spec: statements to nodes (each op parses its own options,
// lib/ops), shape inference and the layout of parameters and state, and the
// canonical text. Grammar in include/snn.h.
#include "ops/spec.h"

#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "ops/spec_text.h"
#include "ops/op.h"

namespace snn {
namespace {

// The most words a statement may have: no layer takes more than 9.
constexpr size_t kMaxWords = 16;

// Reads the next non-empty statement (ended by ';', a newline or the end) of
// spec from *at on into *st as whitespace-separated tokens. False at the end.
bool next_statement(const std::string &spec, size_t *at, Statement *st) {
    st->clear();
    size_t i = *at;
    while (i < spec.size() && (st->empty() || (spec[i] != ';' && spec[i] != '\n'))) {
        const char c = spec[i];
        if (c == ';' || c == '\n' || std::isspace(static_cast<unsigned char>(c))) {
            ++i;
            continue;
        }
        const size_t start = i;
        while (i < spec.size() && spec[i] != ';' && spec[i] != '\n' &&
               !std::isspace(static_cast<unsigned char>(spec[i])))
            ++i;
        st->push_back({spec.substr(start, i - start), start + 1});
        if (st->size() > kMaxWords)
            spec_error(st->back(), "", format("a layer has at most %zu words", kMaxWords));
    }
    *at = i;
    return !st->empty();
}

bool valid_name(const std::string &id) {
    if (id.empty() || id.size() > 64) return false;
    if (!(std::isalpha(static_cast<unsigned char>(id[0])) || id[0] == '_')) return false;
    for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

std::string expected_layers() {
    std::string s;
    for (size_t k = 0; k < op_count(); ++k)
        for (const char *w : op_desc(static_cast<OpKind>(k)).words) s += std::string(s.empty() ? "" : ", ") + w;
    return s;
}

// Layer `index` from its statement; `names` are the layers named before it.
Layer parse_layer(const Statement &st, size_t index, const NameIndex &names) {
    Layer l;
    // name=ID and from=ID may appear anywhere among the options; the op
    // reads the others. inputs[0] is the layer before, or the one from= names.
    int32_t from = int32_t(index) - 1;
    Statement options(1, st[0]);
    for (size_t i = 1; i < st.size(); ++i) {
        if (starts_with(st[i].text, "from=")) {
            if (index == 0) spec_error(st[i], "the input reads no layer: from=ID is for the layers after it", "");
            from = resolve_name(names, Token{st[i].text.substr(5), st[i].pos + 5});
            continue;
        }
        if (!starts_with(st[i].text, "name=")) {
            options.push_back(st[i]);
            continue;
        }
        const std::string id = st[i].text.substr(5);
        if (!valid_name(id))
            spec_error(st[i], "a name must be a letter or '_' followed by letters, digits or '_' (at most 64)", "");
        if (names.count(id)) spec_error(st[i], "an earlier layer has this name", "");
        l.name = id;
    }
    OpKind kind;
    const OpDesc *d = op_by_word(st[0].text, &kind);
    if (!d) spec_error(st[0], "unknown layer", " (expected " + expected_layers() + ")");
    l.kind = kind;
    if (index > 0) l.inputs.push_back(from);
    d->parse(options, l, names);
    check_repeated_options(st);
    return l;
}

// A layer whose output no later layer reads (a branch left open by from=)
// would be computed for nothing and get no gradient: every layer but the
// last, the output, must be read. pos[i] is where layer i's statement starts.
void check_every_layer_read(const Network &net, const std::vector<size_t> &pos) {
    std::vector<char> read(net.layers.size(), 0);
    for (const Layer &l : net.layers)
        for (int32_t k : l.inputs) read[size_t(k)] = 1;
    for (size_t i = 0; i + 1 < net.layers.size(); ++i)
        if (!read[i])
            fail(SNN_ERR_SPEC,
                 "spec position %zu: %s is read by no later layer (only the last layer, the output, may be left "
                 "unread: join the branch with add or concat, or remove it)",
                 pos[i], layer_label(net, i).c_str());
}

// Shapes, parameter and state counts and offsets of every node. Every size
// the engine multiplies is bounded here, once: each dimension by kMaxDim (the
// parser), each node's elements per sample (c * h * w) and weights by
// kMaxElements, a convolution's lowered input by kMaxLowered and the
// parameter and state vectors by kMaxParams; Shape::size() and the engine's
// products of these never overflow int64_t or size_t.
void infer_shapes(Network &net) {
    size_t params = 0, state = 0;
    for (size_t i = 0; i < net.layers.size(); ++i) {
        Layer &l = net.layers[i];
        if (!l.inputs.empty()) l.in = net.layers[size_t(l.inputs[0])].out;
        const OpDesc &d = op_desc(l.kind);
        for (int32_t k : l.inputs) {
            const Shape &in = net.layers[size_t(k)].out;
            if (d.tokens) {
                if (!in.is_tokens)
                    shape_error(net.layers, i,
                                format("input %s is not token ids; %s takes 'input tokens T vocab=V'",
                                       shape_text(in).c_str(), d.name));
                continue;
            }
            if (in.is_tokens)
                shape_error(net.layers, i,
                            format("input %s is token ids; add 'embedding D' to turn them into vectors",
                                   shape_text(in).c_str()));
            if (in.is_seq && !d.sequences)
                shape_error(net.layers, i,
                            format("input %s is a sequence, which %s does not take (sequence pooling, "
                                   "'seqpool last|mean|max', or 'flatten' makes it a vector)",
                                   shape_text(in).c_str(), d.name));
            if (!in.is_seq && d.requires_sequence)
                shape_error(net.layers, i,
                            format("input %s is not a sequence; %s takes sequences (input seq TxF)",
                                   shape_text(in).c_str(), d.name));
        }
        d.infer(l, net.layers, i);
        if (l.out.h > kMaxElements / l.out.w || l.out.c > kMaxElements / (l.out.h * l.out.w))
            shape_error(net.layers, i,
                        format("%s %s is too large: more than 2^31 elements per sample", i == 0 ? "input" : "output",
                               shape_text(l.out).c_str()));
        l.weight_offset = params;
        l.bias_offset = params + l.weight_count;
        params += l.weight_count + l.bias_count;
        if (params > kMaxParams) shape_error(net.layers, i, "more than 2^32 parameters");
        l.state_offset = state;
        state += l.state_count;
        if (state > kMaxParams) shape_error(net.layers, i, "more than 2^32 state values");
        for (TensorSlot &t : l.tensors) t.offset += t.state ? l.state_offset : l.weight_offset;
    }
    net.param_count = params;
    net.state_count = state;
}

}  // namespace

Network parse_spec(const std::string &spec) {
    if (spec.size() > kMaxSpecLength)
        fail(SNN_ERR_SPEC, "spec has %zu characters, more than SNN_MAX_SPEC_LENGTH (%zu)", spec.size(), kMaxSpecLength);
    if (spec.find('\0') != std::string::npos) fail(SNN_ERR_SPEC, "spec contains a NUL byte");
    Network net;
    net.layers.reserve(std::min(kMaxLayers, size_t(1 + std::count(spec.begin(), spec.end(), ';') +
                                                   std::count(spec.begin(), spec.end(), '\n'))));
    NameIndex names;
    Statement st;
    std::vector<size_t> pos;
    for (size_t at = 0, i = 0; next_statement(spec, &at, &st); ++i) {
        if (i == kMaxLayers)
            spec_error(st[0], "",
                       format("a model has at most %d layers after its input (SNN_MAX_LAYERS)", SNN_MAX_LAYERS));
        const bool is_input = st[0].text == "input";
        if (i == 0 && !is_input)
            spec_error(st[0], "the first layer must be 'input N', 'input HxWxC', 'input seq TxF' or 'input tokens T vocab=V'",
                       "");
        if (i > 0 && is_input) spec_error(st[0], "'input' may appear only as the first layer", "");
        net.layers.push_back(parse_layer(st, i, names));
        pos.push_back(st[0].pos);
        if (!net.layers.back().name.empty()) names.emplace(net.layers.back().name, int32_t(i));
    }
    if (net.layers.empty()) fail(SNN_ERR_SPEC, "spec is empty (expected e.g. \"input 100; dense 10\")");
    if (net.layers.size() < 2) fail(SNN_ERR_SPEC, "spec has an input but no layers after it");
    check_every_layer_read(net, pos);
    infer_shapes(net);
    return net;
}

std::string describe(const Network &net) {
    std::string s;
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Layer &l = net.layers[i];
        if (i) s += "; ";
        s += op_desc(l.kind).describe(l, net.layers);
        if (reads_earlier(l, i)) s += " from=" + net.layers[size_t(l.inputs[0])].name;
        if (!l.name.empty()) s += " name=" + l.name;
    }
    return s;
}

}  // namespace snn
