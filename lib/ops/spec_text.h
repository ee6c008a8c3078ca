// Helpers shared by the spec parser and the op descriptors: tokens, numbers,
// sizes, options, and the errors that quote the spec.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <map>
#include <string>
#include <vector>

#include "ops/spec.h"
#include "snn.h"

namespace snn {

struct Token {
    std::string text;
    size_t pos;  // 1-based character position in the spec
};
using Statement = std::vector<Token>;
// The layers named so far (name=ID) and their indices. An ordered map: a
// lookup costs O(log n) comparisons of at most 64 characters whatever the
// names are, where a hash table's could be made O(n) by chosen names.
using NameIndex = std::map<std::string, int32_t>;

// Limits every size of a spec is checked against (see infer_shapes).
constexpr int64_t kMaxDim = int64_t(1) << 24;        // any single size
constexpr int64_t kMaxElements = int64_t(1) << 31;   // per-sample activation, one layer's weights
constexpr int64_t kMaxLowered = int64_t(1) << 40;    // a convolution's lowered input per sample
constexpr size_t kMaxParams = size_t(1) << 32;
// The largest model a spec (or a file's spec) may declare (include/snn.h):
// layers, the input included, and characters.
constexpr size_t kMaxLayers = SNN_MAX_LAYERS + 1;
constexpr size_t kMaxSpecLength = SNN_MAX_SPEC_LENGTH;

[[noreturn]] void spec_error(const Token &t, const char *what, const std::string &detail);
[[noreturn]] void unknown_option(const Token &t, const char *layer, const char *expected);

// A positive (or, with allow_zero, non-negative) decimal integer up to kMaxDim.
bool parse_int(const std::string &s, size_t begin, size_t end, bool allow_zero, int64_t *out);
// "A" or "AxB" (or "AxBxC" with c). Returns the number of parts, 0 when malformed.
int parse_dims(const std::string &s, bool allow_zero, int64_t *a, int64_t *b, int64_t *c);
// A finite decimal number (strtod syntax, nothing after it).
bool parse_real(const std::string &s, double *out);
bool starts_with(const std::string &s, const char *prefix);
bool parse_act(const std::string &s, Act *a);
// Options shared by dense and conv: an activation, nobias, init=.
bool parse_common_option(const Token &t, Layer &l);
// Refuses an option given twice in one statement (st[0] is the keyword):
// the same KEY= twice, two activations, nobias twice.
void check_repeated_options(const Statement &st);
// eps=E with E a normal float32 in [2^-126, 1] (batchnorm, layernorm).
bool parse_eps(const Token &t, Layer &l);
// stride=S[xS] and (allow_pad) pad=P[xP].
bool parse_stride_pad(const Token &t, Layer &l, bool allow_pad);
// " relu nobias init=he_normal" for the options that differ from the defaults.
std::string common_options_text(const Layer &l);
// "KH" or "KHxKW"
std::string pair_text(int64_t a, int64_t b);
// The shortest decimal text that parses back to exactly v.
std::string real_text(double v);

std::string shape_text(const Shape &s);
[[noreturn]] void shape_error(const std::vector<Layer> &layers, size_t index, const std::string &why);
// a * b for positive sizes, or a shape error when the product exceeds limit.
int64_t checked_mul(int64_t a, int64_t b, int64_t limit, const std::vector<Layer> &layers, size_t index,
                    const char *what);
// Output size of a sliding window, floor division as PyTorch.
inline int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t pad) {
    return (in + 2 * pad - k) / stride + 1;
}
// Input j of layer `index` for a shape message: "layer 4, the previous one"
// (inputs[0] without from=) or "layer 2, 'a'" (a layer read by name: add's
// and concat's ID, from=).
std::string input_text(const std::vector<Layer> &layers, size_t index, size_t j);
// The node named by an add/concat argument or from=ID (an earlier
// name=ID), or a spec error.
int32_t resolve_name(const NameIndex &names, const Token &t);

}  // namespace snn
