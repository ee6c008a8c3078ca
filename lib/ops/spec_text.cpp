// Helpers shared by the spec parser and the op descriptors.
#include "ops/spec_text.h"

#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "ops/op.h"

namespace snn {
namespace {

const char *const kActNames[] = {
#define SNN_ACT_NAME(name) #name,
    SNN_ACT_LIST(SNN_ACT_NAME)
#undef SNN_ACT_NAME
};
constexpr int kActCount = int(sizeof(kActNames) / sizeof(kActNames[0]));
const char *const kInitNames[] = {"glorot_uniform", "glorot_normal", "he_uniform",
                                  "he_normal",      "lecun_normal",  "zeros"};

}  // namespace

const char *act_name(Act a) { return kActNames[static_cast<int>(a)]; }
const char *init_name(Init i) { return kInitNames[static_cast<int>(i)]; }

[[noreturn]] void spec_error(const Token &t, const char *what, const std::string &detail) {
    fail(SNN_ERR_SPEC, "spec position %zu ('%s'): %s%s", t.pos, t.text.c_str(), what, detail.c_str());
}

[[noreturn]] void unknown_option(const Token &t, const char *layer, const char *expected) {
    fail(SNN_ERR_SPEC, "spec position %zu: unknown option '%s' for %s (expected %s)", t.pos, t.text.c_str(),
         layer, expected);
}

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

bool parse_real(const std::string &s, double *out) {
    if (s.empty() || s.size() > 40) return false;
    for (char ch : s)
        if (!(std::isdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == 'e' || ch == 'E' || ch == '-' ||
              ch == '+'))
            return false;
    char *end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
    *out = v;
    return true;
}

std::string real_text(double v) {
    for (int digits = 1; digits <= 17; ++digits) {
        std::string t = format("%.*g", digits, v);
        if (std::strtod(t.c_str(), nullptr) == v) return t;
    }
    return format("%.17g", v);
}

bool starts_with(const std::string &s, const char *prefix) {
    return s.compare(0, std::strlen(prefix), prefix) == 0;
}

bool parse_act(const std::string &s, Act *a) {
    for (int i = 0; i < kActCount; ++i)
        if (s == kActNames[i]) {
            *a = static_cast<Act>(i);
            return true;
        }
    return false;
}

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

// What a token of a statement sets, as messages name it: "KEY=" for
// KEY=VALUE, "an activation" for an activation's word, "nobias"; empty for
// the sizes and names each op reads by position.
std::string option_key(const std::string &text) {
    const size_t eq = text.find('=');
    if (eq != std::string::npos) return text.substr(0, eq + 1);
    Act a;
    if (parse_act(text, &a)) return "an activation";
    return text == "nobias" ? text : "";
}

void check_repeated_options(const Statement &st) {
    std::map<std::string, const Token *> first;
    for (size_t i = 1; i < st.size(); ++i) {
        const std::string key = option_key(st[i].text);
        if (key.empty()) continue;
        const auto [it, fresh] = first.emplace(key, &st[i]);
        if (!fresh)
            spec_error(st[i], "",
                       format("%s is given twice in one layer (first at position %zu: '%s')", key.c_str(),
                              it->second->pos, it->second->text.c_str()));
    }
}

std::string common_options_text(const Layer &l) {
    std::string s;
    if (l.act != Act::identity) s += std::string(" ") + act_name(l.act);
    if (!l.bias) s += " nobias";
    if (l.init != Init::glorot_uniform) s += std::string(" init=") + init_name(l.init);
    return s;
}

bool parse_eps(const Token &t, Layer &l) {
    if (!starts_with(t.text, "eps=")) return false;
    if (!parse_real(t.text.substr(4), &l.eps) || !(float(l.eps) >= FLT_MIN && l.eps <= 1.0))
        spec_error(t, "eps must be a number in [1.17549435e-38, 1]",
                   ", a normal float32 (the normalisation runs in float32, where a smaller eps is a subnormal or 0)");
    return true;
}

bool parse_stride_pad(const Token &t, Layer &l, bool allow_pad) {
    if (starts_with(t.text, "stride=")) {
        int n = parse_dims(t.text.substr(7), false, &l.sh, &l.sw, nullptr);
        if (n != 1 && n != 2) spec_error(t, "stride must be S or SHxSW with positive integers", "");
        return true;
    }
    if (allow_pad && starts_with(t.text, "pad=")) {
        int n = parse_dims(t.text.substr(4), true, &l.ph, &l.pw, nullptr);
        if (n != 1 && n != 2) spec_error(t, "pad must be P or PHxPW with integers >= 0", "");
        return true;
    }
    return false;
}

std::string pair_text(int64_t a, int64_t b) {
    return a == b ? format("%lld", (long long)a) : format("%lldx%lld", (long long)a, (long long)b);
}

std::string shape_text(const Shape &s) {
    if (s.is_tokens) return format("tokens %lld", (long long)s.h);
    if (s.is_seq) return format("seq %lldx%lld", (long long)s.h, (long long)s.c);
    return s.is_image ? format("%lldx%lldx%lld", (long long)s.h, (long long)s.w, (long long)s.c)
                      : format("%lld", (long long)s.c);
}

std::string layer_label(const Network &net, size_t index) {
    const Layer &l = net.layers[index];
    std::string head;
    switch (l.kind) {
        case OpKind::dense: head = format("dense %lld", (long long)l.units); break;
        case OpKind::conv:
            head = format("conv %lldx%lld %lld", (long long)l.kh, (long long)l.kw, (long long)l.units);
            break;
        case OpKind::maxpool:
        case OpKind::avgpool:
            head = format("%s %lldx%lld", l.kind == OpKind::maxpool ? "maxpool" : "avgpool", (long long)l.kh,
                          (long long)l.kw);
            break;
        case OpKind::input: head = "input"; break;
        default: head = op_desc(l.kind).describe(l, net.layers); break;
    }
    if (reads_earlier(l, index)) head += " from=" + net.layers[size_t(l.inputs[0])].name;
    if (!l.name.empty()) head += " name=" + l.name;
    return format("layer %zu (%s)", index, head.c_str());
}

std::string input_text(const std::vector<Layer> &layers, size_t index, size_t j) {
    const int32_t k = layers[index].inputs[j];
    if (j == 0 && size_t(k) + 1 == index) return format("layer %d, the previous one", k);
    return format("layer %d, '%s'", k, layers[size_t(k)].name.c_str());
}

[[noreturn]] void shape_error(const std::vector<Layer> &layers, size_t index, const std::string &why) {
    Network view;
    view.layers.assign(layers.begin(), layers.begin() + index + 1);
    fail(SNN_ERR_SHAPE, "%s: %s", layer_label(view, index).c_str(), why.c_str());
}

int64_t checked_mul(int64_t a, int64_t b, int64_t limit, const std::vector<Layer> &layers, size_t index,
                    const char *what) {
    if (b > limit / a)
        shape_error(layers, index,
                    format("%s too large: %lld x %lld is above the limit of %lld", what, (long long)a, (long long)b,
                           (long long)limit));
    return a * b;
}

int32_t resolve_name(const NameIndex &names, const Token &t) {
    const auto it = names.find(t.text);
    if (it != names.end()) return it->second;
    spec_error(t, "no earlier layer has this name", " (give one with name=ID on a layer before this one)");
}

}  // namespace snn
