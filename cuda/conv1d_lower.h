// conv1d's lowering and its adjoint on the GPU (ops/seq_math.h has the
// per-element formulas the CPU runs too), used by conv1d.cu around its
// cuBLAS products.
#pragma once

#include <stdint.h>

#include "check.h"
#include "ops/seq_math.h"

namespace snn {
namespace cu {

// col[r][j] = conv1d_lowered(d, x, lengths, first, r, j) for the nb samples
// from `first`: nb T' rows of C K values.
void conv1d_lower(cudaStream_t stream, const Conv1dDims &d, const float *x, const int32_t *lengths,
                  int64_t first, int64_t nb, float *col);

// dx[s] for the nb samples from `first` = the adjoint of the lowering of
// dcol (conv1d_adjoint): every value of those samples is written.
void conv1d_lower_adjoint(cudaStream_t stream, const Conv1dDims &d, const float *dcol,
                          const int32_t *lengths, int64_t first, int64_t nb, float *dx);

}  // namespace cu
}  // namespace snn
