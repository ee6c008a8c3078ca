// Per-element formulas of the sequence ops (seqpool's maximum and input
// gradient, conv1d's lowering and its adjoint) and conv1d's sizes, shared by
// the CPU loops and the CUDA kernels so the two backends agree bit for bit.
// The CPU lowers conv1d row by row (lib/cpu/conv1d.cpp), the same values
// summed in the same order as conv1d_lowered and conv1d_adjoint here, which
// the GPU evaluates one value per thread.
#pragma once

#include <stdint.h>

#include "core/math.h"
#include "ops/spec.h"

namespace snn {

// Valid steps of sample s: lengths[s], or all T when lengths is null.
SNN_HD int64_t valid_steps(const int32_t *lengths, int64_t s, int64_t steps) {
    return lengths ? int64_t(lengths[s]) : steps;
}

// seqpool max: the value v at a later step replaces the maximum so far: a
// larger value, or the first NaN (a NaN is kept once found, as torch.max).
SNN_HD bool seqpool_replaces(float v, float best) { return v > best || (v != v && best == best); }

// seqpool's input gradient at step t of a sample of len valid steps whose
// maximum (max) lies at step m: dy at t = len - 1 (last), dy / len at
// t < len (mean), dy at t = m (max); 0 elsewhere.
SNN_HD float seqpool_dx(SeqPool pool, int64_t t, int64_t len, int64_t m, float dy) {
    if (pool == SeqPool::last) return t == len - 1 ? dy : 0.0f;
    if (pool == SeqPool::mean) return t < len ? dy / float(len) : 0.0f;
    return t == m ? dy : 0.0f;
}

// A conv1d node's sizes: input [steps][channels], output [out_steps][out],
// kernel k with stride, padding and dilation.
struct Conv1dDims {
    int64_t steps, channels, out_steps, out, k, stride, pad, dilation;
    // Values of a lowered row: (c, k), k fastest, as W[o][c][k].
    SNN_HD int64_t cols() const { return channels * k; }
};

inline Conv1dDims conv1d_dims(const Layer &l) {
    return {l.in.steps(), l.in.row_size(), l.out.steps(), l.out.row_size(), l.kh, l.sh, l.ph, l.dilation};
}

// The lowered input of samples first.. : row r = (s - first) T' + t', column
// j = c K + k holds x[s][t' S - P + k D][c], 0 outside the sample's valid
// steps [0, length). Then z[rows][out] = col[rows][C K] W[out][C K]^T.
SNN_HD float conv1d_lowered(const Conv1dDims &d, const float *x, const int32_t *lengths, int64_t first,
                            int64_t r, int64_t j) {
    const int64_t s = first + r / d.out_steps, t = r % d.out_steps, c = j / d.k, k = j % d.k;
    const int64_t ti = t * d.stride - d.pad + k * d.dilation;
    if (ti < 0 || ti >= valid_steps(lengths, s, d.steps)) return 0.0f;
    return x[(s * d.steps + ti) * d.channels + c];
}

// The adjoint of the lowering at dx[s][ti][c]: the sum over k = 0, 1, ...
// (in that order) of the lowered gradient dcol at every place x[s][ti][c]
// was copied to; 0 at steps past the sample's length.
SNN_HD float conv1d_adjoint(const Conv1dDims &d, const float *dcol, const int32_t *lengths, int64_t first,
                            int64_t s, int64_t ti, int64_t c) {
    if (ti >= valid_steps(lengths, s, d.steps)) return 0.0f;
    const int64_t cols = d.cols();
    float sum = 0.0f;
    for (int64_t k = 0; k < d.k; ++k) {
        const int64_t at = ti + d.pad - k * d.dilation;  // t' S
        if (at < 0 || at % d.stride != 0 || at / d.stride >= d.out_steps) continue;
        sum += dcol[((s - first) * d.out_steps + at / d.stride) * cols + c * d.k + k];
    }
    return sum;
}

}  // namespace snn
