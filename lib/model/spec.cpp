// Textual model spec: parser, shape inference, parameter layout, canonical
// printing. Grammar in include/snn.h.
#include "model/spec.h"

#include <cctype>
#include <cstring>

#include "common/error.h"

namespace snn {
namespace {

constexpr int64_t kMaxDim = int64_t(1) << 24;        // any single size
constexpr int64_t kMaxElements = int64_t(1) << 31;   // per-sample activation, one layer's weights
constexpr int64_t kMaxLowered = int64_t(1) << 40;    // a convolution's lowered input per sample
constexpr size_t kMaxParams = size_t(1) << 32;

struct Token {
    std::string text;
    size_t pos;  // 1-based character position in the spec
};

const char *const kActNames[] = {"identity", "relu", "leaky_relu", "tanh", "sigmoid"};
const char *const kInitNames[] = {"glorot_uniform", "glorot_normal", "he_uniform",
                                  "he_normal",      "lecun_normal",  "zeros"};

[[noreturn]] void spec_error(const Token &t, const char *what, const std::string &detail) {
    fail(SNN_ERR_SPEC, "spec position %zu ('%s'): %s%s", t.pos, t.text.c_str(), what,
         detail.c_str());
}

// Splits the spec into statements (by ';' or newline) of whitespace-separated
// tokens.
std::vector<std::vector<Token>> tokenize(const std::string &spec) {
    std::vector<std::vector<Token>> statements(1);
    size_t i = 0;
    while (i < spec.size()) {
        char c = spec[i];
        if (c == ';' || c == '\n') {
            statements.emplace_back();
            ++i;
        } else if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else {
            size_t start = i;
            while (i < spec.size() && spec[i] != ';' && spec[i] != '\n' &&
                   !std::isspace(static_cast<unsigned char>(spec[i])))
                ++i;
            statements.back().push_back({spec.substr(start, i - start), start + 1});
        }
    }
    std::vector<std::vector<Token>> out;
    for (auto &s : statements)
        if (!s.empty()) out.push_back(std::move(s));
    return out;
}

// A positive (or, with allow_zero, non-negative) decimal integer.
bool parse_int(const std::string &s, size_t begin, size_t end, bool allow_zero, int64_t *out) {
    if (begin >= end || end - begin > 9) return false;
    int64_t v = 0;
    for (size_t i = begin; i < end; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v > kMaxDim || (v == 0 && !allow_zero)) return false;
    *out = v;
    return true;
}

// "A" or "AxB" (or "AxBxC" with three outputs). Returns the number of parts.
int parse_dims(const std::string &s, bool allow_zero, int64_t *a, int64_t *b, int64_t *c) {
    int64_t v[3];
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
        if (i == s.size() || s[i] == 'x') {
            if (n == 3 || !parse_int(s, start, i, allow_zero, &v[n])) return 0;
            ++n;
            start = i + 1;
        }
    }
    *a = v[0];
    if (b) *b = n >= 2 ? v[1] : v[0];
    if (c && n == 3) *c = v[2];
    return n;
}

bool starts_with(const std::string &s, const char *prefix) {
    return s.compare(0, std::strlen(prefix), prefix) == 0;
}

bool parse_act(const std::string &s, Act *a) {
    for (int i = 0; i < 5; ++i)
        if (s == kActNames[i]) {
            *a = static_cast<Act>(i);
            return true;
        }
    return false;
}

// Options shared by dense and conv: activation, nobias, init=.
bool parse_common_option(const Token &t, Layer &l) {
    if (parse_act(t.text, &l.act)) return true;
    if (t.text == "nobias") {
        l.bias = false;
        return true;
    }
    if (starts_with(t.text, "init=")) {
        std::string v = t.text.substr(5);
        for (int i = 0; i < 6; ++i)
            if (v == kInitNames[i]) {
                l.init = static_cast<Init>(i);
                return true;
            }
        spec_error(t, "unknown initialiser",
                   " (expected glorot_uniform, glorot_normal, he_uniform, he_normal, "
                   "lecun_normal or zeros)");
    }
    return false;
}

bool parse_stride_pad(const Token &t, Layer &l, bool allow_pad) {
    if (starts_with(t.text, "stride=")) {
        int n = parse_dims(t.text.substr(7), false, &l.sh, &l.sw, nullptr);
        if (n != 1 && n != 2)
            spec_error(t, "stride must be S or SHxSW with positive integers", "");
        return true;
    }
    if (allow_pad && starts_with(t.text, "pad=")) {
        int n = parse_dims(t.text.substr(4), true, &l.ph, &l.pw, nullptr);
        if (n != 1 && n != 2) spec_error(t, "pad must be P or PHxPW with integers >= 0", "");
        return true;
    }
    return false;
}

[[noreturn]] void unknown_option(const Token &t, const char *layer, const char *expected) {
    fail(SNN_ERR_SPEC, "spec position %zu: unknown option '%s' for %s (expected %s)", t.pos,
         t.text.c_str(), layer, expected);
}

Layer parse_layer(const std::vector<Token> &st) {
    const Token &head = st[0];
    Layer l;
    if (head.text == "input") {
        l.kind = LayerKind::input;
        if (st.size() != 2) spec_error(head, "input takes one size: N or HxWxC", "");
        int64_t h = 0, w = 0, c = 0;
        int n = parse_dims(st[1].text, false, &h, &w, &c);
        if (n == 1) {
            l.out = {h, 1, 1, false};
        } else if (n == 3) {
            l.out = {c, h, w, true};
        } else {
            spec_error(st[1], "input size must be N or HxWxC with positive integers", "");
        }
    } else if (head.text == "dense") {
        l.kind = LayerKind::dense;
        if (st.size() < 2 || !parse_int(st[1].text, 0, st[1].text.size(), false, &l.units))
            spec_error(st.size() < 2 ? head : st[1], "dense needs a positive number of units",
                       "");
        for (size_t i = 2; i < st.size(); ++i)
            if (!parse_common_option(st[i], l))
                unknown_option(st[i], "dense",
                               "an activation (identity, relu, leaky_relu, tanh, sigmoid), "
                               "nobias or init=...");
    } else if (head.text == "conv") {
        l.kind = LayerKind::conv;
        int n = st.size() >= 2 ? parse_dims(st[1].text, false, &l.kh, &l.kw, nullptr) : 0;
        if (n != 1 && n != 2) spec_error(st.size() < 2 ? head : st[1], "conv needs a kernel size K or KHxKW", "");
        if (st.size() < 3 || !parse_int(st[2].text, 0, st[2].text.size(), false, &l.units))
            spec_error(st.size() < 3 ? st[1] : st[2], "conv needs a positive number of output channels", "");
        for (size_t i = 3; i < st.size(); ++i)
            if (!parse_common_option(st[i], l) && !parse_stride_pad(st[i], l, true))
                unknown_option(st[i], "conv",
                               "an activation, stride=S, pad=P, nobias or init=...");
    } else if (head.text == "maxpool" || head.text == "avgpool") {
        l.kind = head.text == "maxpool" ? LayerKind::maxpool : LayerKind::avgpool;
        int n = st.size() >= 2 ? parse_dims(st[1].text, false, &l.kh, &l.kw, nullptr) : 0;
        if (n != 1 && n != 2) spec_error(st.size() < 2 ? head : st[1], "pooling needs a size K or KHxKW", "");
        l.sh = l.kh;
        l.sw = l.kw;
        for (size_t i = 2; i < st.size(); ++i)
            if (!parse_stride_pad(st[i], l, false))
                unknown_option(st[i], head.text.c_str(), "stride=S");
        l.bias = false;
    } else if (head.text == "flatten") {
        l.kind = LayerKind::flatten;
        l.bias = false;
        if (st.size() > 1) unknown_option(st[1], "flatten", "no options");
    } else {
        spec_error(head, "unknown layer",
                   " (expected input, dense, conv, maxpool, avgpool or flatten)");
    }
    return l;
}

std::string shape_text(const Shape &s) {
    return s.is_image ? format("%lldx%lldx%lld", (long long)s.h, (long long)s.w, (long long)s.c)
                      : format("%lld", (long long)s.c);
}

std::string layer_head(const Layer &l) {
    switch (l.kind) {
        case LayerKind::dense: return format("dense %lld", (long long)l.units);
        case LayerKind::conv:
            return format("conv %lldx%lld %lld", (long long)l.kh, (long long)l.kw, (long long)l.units);
        case LayerKind::maxpool: return format("maxpool %lldx%lld", (long long)l.kh, (long long)l.kw);
        case LayerKind::avgpool: return format("avgpool %lldx%lld", (long long)l.kh, (long long)l.kw);
        case LayerKind::flatten: return "flatten";
        default: return "input";
    }
}

[[noreturn]] void shape_error(size_t index, const Layer &l, const std::string &why) {
    fail(SNN_ERR_SHAPE, "layer %zu (%s): %s", index, layer_head(l).c_str(), why.c_str());
}

// a * b for positive sizes, or a shape error when the product exceeds limit
// (checked before multiplying, so nothing overflows).
int64_t checked_mul(int64_t a, int64_t b, int64_t limit, size_t index, const Layer &l, const char *what) {
    if (b > limit / a)
        shape_error(index, l, format("%s too large: %lld x %lld is above the limit of %lld", what, (long long)a,
                                     (long long)b, (long long)limit));
    return a * b;
}

// Output size of a sliding window, floor division as PyTorch.
int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t pad) {
    return (in + 2 * pad - k) / stride + 1;
}

// Shapes, parameter counts and offsets of every layer. Every size the engine
// multiplies is bounded here, once: each dimension by kMaxDim (the parser),
// each layer's elements per sample (c * h * w) and weights by kMaxElements,
// a convolution's lowered input by kMaxLowered and the parameter vector by
// kMaxParams; Shape::size() and the engine's products of these never
// overflow int64_t or size_t.
void infer_shapes(Network &net) {
    size_t offset = 0;
    for (size_t i = 0; i < net.layers.size(); ++i) {
        Layer &l = net.layers[i];
        if (i > 0) l.in = net.layers[i - 1].out;
        const Shape &in = l.in;
        int64_t lowered_rows = 0;  // conv: in.c kh kw
        switch (l.kind) {
            case LayerKind::input:  // layers[0] only (parse_spec checks); shaped by the spec
                break;
            case LayerKind::dense: {
                if (in.is_image)
                    shape_error(i, l, "input is an image " + shape_text(in) +
                                          "; add 'flatten' before a dense layer");
                l.out = {l.units, 1, 1, false};
                l.weight_count = size_t(checked_mul(l.units, in.size(), kMaxElements, i, l, "weights"));
                break;
            }
            case LayerKind::conv: {
                if (!in.is_image)
                    shape_error(i, l, "input is a vector of " + shape_text(in) +
                                          "; conv needs an image input (input HxWxC)");
                if (in.h + 2 * l.ph < l.kh || in.w + 2 * l.pw < l.kw)
                    shape_error(i, l, format("input %s (padded by %lldx%lld) is smaller than the kernel %lldx%lld",
                                             shape_text(in).c_str(), (long long)l.ph, (long long)l.pw,
                                             (long long)l.kh, (long long)l.kw));
                l.out = {l.units, window_out(in.h, l.kh, l.sh, l.ph),
                         window_out(in.w, l.kw, l.sw, l.pw), true};
                lowered_rows = checked_mul(checked_mul(in.c, l.kh, kMaxElements, i, l, "weights per output channel"),
                                           l.kw, kMaxElements, i, l, "weights per output channel");
                l.weight_count = size_t(checked_mul(l.units, lowered_rows, kMaxElements, i, l, "weights"));
                break;
            }
            case LayerKind::maxpool:
            case LayerKind::avgpool: {
                if (!in.is_image)
                    shape_error(i, l, "input is a vector of " + shape_text(in) +
                                          "; pooling needs an image input");
                if (in.h < l.kh || in.w < l.kw)
                    shape_error(i, l, format("input %s is smaller than the pool %lldx%lld",
                                             shape_text(in).c_str(), (long long)l.kh, (long long)l.kw));
                l.out = {in.c, window_out(in.h, l.kh, l.sh, 0), window_out(in.w, l.kw, l.sw, 0), true};
                break;
            }
            case LayerKind::flatten:
                l.out = {in.size(), 1, 1, false};
                break;
        }
        if (l.out.h > kMaxElements / l.out.w || l.out.c > kMaxElements / (l.out.h * l.out.w))
            shape_error(i, l, format("%s %s is too large: more than 2^31 elements per sample", i == 0 ? "input" : "output",
                                     shape_text(l.out).c_str()));
        // A convolution lowered to a matrix (im2col) holds (in.c kh kw + out.c)
        // x (out.h out.w) values per sample.
        if (l.kind == LayerKind::conv)
            checked_mul(lowered_rows + l.units, l.out.h * l.out.w, kMaxLowered, i, l, "lowered input per sample");
        l.weight_offset = offset;
        offset += l.weight_count;
        if (l.bias && (l.kind == LayerKind::dense || l.kind == LayerKind::conv)) {
            l.bias_count = size_t(l.units);
            l.bias_offset = offset;
            offset += l.bias_count;
        } else {
            l.bias_count = 0;
            l.bias_offset = offset;
        }
        if (offset > kMaxParams) shape_error(i, l, "more than 2^32 parameters");
    }
    net.param_count = offset;
    net.max_activation = 0;
    for (const Layer &l : net.layers)
        if (size_t(l.out.size()) > net.max_activation) net.max_activation = size_t(l.out.size());
}

}  // namespace

const char *act_name(Act a) { return kActNames[static_cast<int>(a)]; }
const char *init_name(Init i) { return kInitNames[static_cast<int>(i)]; }

Network parse_spec(const std::string &spec) {
    if (spec.find('\0') != std::string::npos) fail(SNN_ERR_SPEC, "spec contains a NUL byte");
    auto statements = tokenize(spec);
    if (statements.empty()) fail(SNN_ERR_SPEC, "spec is empty (expected e.g. \"input 100; dense 10\")");
    Network net;
    for (size_t i = 0; i < statements.size(); ++i) {
        Layer l = parse_layer(statements[i]);
        if (i == 0 && l.kind != LayerKind::input)
            spec_error(statements[0][0], "the first layer must be 'input N' or 'input HxWxC'", "");
        if (i > 0 && l.kind == LayerKind::input)
            spec_error(statements[i][0], "'input' may appear only as the first layer", "");
        net.layers.push_back(l);
    }
    if (net.layers.size() < 2) fail(SNN_ERR_SPEC, "spec has an input but no layers after it");
    infer_shapes(net);
    return net;
}

std::string describe(const Network &net) {
    std::string s;
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Layer &l = net.layers[i];
        if (i) s += "; ";
        switch (l.kind) {
            case LayerKind::input: s += "input " + shape_text(l.out); break;
            case LayerKind::dense:
            case LayerKind::conv:
                if (l.kind == LayerKind::dense) {
                    s += format("dense %lld", (long long)l.units);
                } else {
                    s += l.kh == l.kw ? format("conv %lld %lld", (long long)l.kh, (long long)l.units)
                                      : format("conv %lldx%lld %lld", (long long)l.kh, (long long)l.kw,
                                               (long long)l.units);
                    if (l.sh != 1 || l.sw != 1)
                        s += l.sh == l.sw ? format(" stride=%lld", (long long)l.sh)
                                          : format(" stride=%lldx%lld", (long long)l.sh, (long long)l.sw);
                    if (l.ph != 0 || l.pw != 0)
                        s += l.ph == l.pw ? format(" pad=%lld", (long long)l.ph)
                                          : format(" pad=%lldx%lld", (long long)l.ph, (long long)l.pw);
                }
                if (l.act != Act::identity) s += std::string(" ") + act_name(l.act);
                if (!l.bias) s += " nobias";
                if (l.init != Init::glorot_uniform) s += std::string(" init=") + init_name(l.init);
                break;
            case LayerKind::maxpool:
            case LayerKind::avgpool:
                s += l.kind == LayerKind::maxpool ? "maxpool " : "avgpool ";
                s += l.kh == l.kw ? format("%lld", (long long)l.kh)
                                  : format("%lldx%lld", (long long)l.kh, (long long)l.kw);
                if (l.sh != l.kh || l.sw != l.kw)
                    s += l.sh == l.sw ? format(" stride=%lld", (long long)l.sh)
                                      : format(" stride=%lldx%lld", (long long)l.sh, (long long)l.sw);
                break;
            case LayerKind::flatten: s += "flatten"; break;
        }
    }
    return s;
}

}  // namespace snn
