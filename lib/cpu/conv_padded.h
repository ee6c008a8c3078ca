// The geometry the direct convolutions of cpu/conv_avx512.cpp and
// cpu/conv_avx2.cpp share, whatever their vector width: an image copied
// into a zero-padded buffer whose rows all have one pitch, outputs computed
// in its flat coordinates q = oy*pitch + ox, and the product's operands
// described as strides, so that one product serves the forward pass and
// (over the padded output gradient, the kernel turned around) the input
// gradient.
#pragma once

#include <stdint.h>

#include "core/backend.h"

namespace snn {
namespace conv_padded {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A zero-padded copy of `channels` maps of rows x cols: planes of `rows`
// rows of `pitch` floats, the map at row `top`, column `left`.
struct Padded {
    int64_t channels, rows, pitch, top, left;
    int64_t plane() const { return rows * pitch; }
    int64_t floats() const { return channels * plane(); }
};

// The geometry of both passes: rows of win + pw floats, pw zeros and then
// the row's values, so that the zeros before a row also pad the end of the
// row above; an output row then computes kw - 1 - pw values past its end
// (kw - 1 with a pad on each side). One extra row of zeros under the map
// serves the last row's taps. The output gradient's rows, kw - 1 - pw zeros
// and wout values, have the same pitch.
inline int64_t shared_pitch(const ConvDims &d) { return d.win + d.pw; }

inline Padded forward_padded(const ConvDims &d) { return {d.cin, d.hin + 2 * d.ph + 1, shared_pitch(d), d.ph, d.pw}; }

// The backward pass's padded input and padded output gradient.
struct BackwardPads {
    Padded x, dz;
};

inline BackwardPads backward_pads(const ConvDims &d) {
    const int64_t pitch = shared_pitch(d), dz_top = d.kh - 1 - d.ph;
    return {{d.cin, d.hin + 2 * d.ph + 1, pitch, d.ph, d.pw},
            {d.cout, d.hout + 2 * dz_top + 1, pitch, dz_top, d.kw - 1 - d.pw}};
}

// The weight of tile row r, input channel c, tap (i, j) is
// w[r*rs + c*cs + i*is + j*js]: the layer's kernel as it is (forward) or
// turned around with input and output channels exchanged (input gradient).
struct Weights {
    const float *w;
    int64_t rs, cs, is, js;
};

// The weights of the forward pass, and of the input gradient (the kernel
// turned around, input and output channels exchanged).
inline Weights forward_weights(const ConvDims &d, const float *w) {
    return {w, d.cin * d.kh * d.kw, d.kh * d.kw, d.kw, 1};
}
inline Weights turned_weights(const ConvDims &d, const float *w) {
    return {w + (d.kh - 1) * d.kw + d.kw - 1, d.kh * d.kw, d.cin * d.kh * d.kw, -d.kw, -1};
}

// A product over a padded buffer: `channels` planes of src, taps kh x kw,
// outputs `count` values of q of which the columns below `width` are kept,
// written to maps of `map` floats; `lanes` says which values of q each
// vector stores (the kernel's own table).
template <class Lanes>
struct Product {
    const float *src;
    int64_t channels, plane, pitch, kh, kw, count, width, map;
    const Lanes *lanes;
};

enum class Epilogue { identity, relu };

}  // namespace conv_padded
}  // namespace snn
