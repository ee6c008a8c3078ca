// A loss is one descriptor (LossDesc, in engine/losses.cpp: its public id,
// its name, what it reads from the backward cache, its optional parameter)
// plus one kernel per backend (loss_kernel: CpuBackend's in cpu/loss.cpp,
// CudaBackend's in cuda/loss.cu), registered by one line in SNN_LOSS_LIST.
// The per-element math is in core/math.h, shared by both backends.
#pragma once

#include <stdint.h>

#include "snn.h"

// X(name, public id): the kind LossKind::name, the descriptor loss_<name>
// and the kernels loss_<name> of each backend.
#define SNN_LOSS_LIST(X)                             \
    X(mse, SNN_LOSS_MSE)                             \
    X(logit_crossentropy, SNN_LOSS_LOGIT_CROSSENTROPY) \
    X(huber, SNN_LOSS_HUBER)                         \
    X(smooth_l1, SNN_LOSS_SMOOTH_L1)                 \
    X(bce_with_logits, SNN_LOSS_BCE_WITH_LOGITS)

namespace snn {

class Backend;
class Stream;

enum class LossKind : int32_t {
#define SNN_LOSS_ENUM(name, id) name,
    SNN_LOSS_LIST(SNN_LOSS_ENUM)
#undef SNN_LOSS_ENUM
};

constexpr size_t kLossCount = 0
#define SNN_LOSS_COUNT(name, id) +1
    SNN_LOSS_LIST(SNN_LOSS_COUNT)
#undef SNN_LOSS_COUNT
    ;

// What a loss compares the outputs [batch][outputs] with.
enum class LossInput : int32_t {
    targets,  // floats [batch][outputs], snn_set_targets
    labels,   // int32 class indices [batch] in [0, outputs), snn_set_labels*
};

// A loss's scalar parameter (Huber's delta), set per backward cache with
// snn_set_loss_parameter. name is null for a loss without one. Accepted
// values: finite, min < value (min <= value when min_inclusive), value <= max.
struct LossParam {
    const char *name;
    double default_value, min, max;
    bool min_inclusive;
};

struct LossDesc {
    LossKind kind;
    int32_t id;            // the public snn_loss value
    const char *constant;  // "SNN_LOSS_MSE"
    const char *name;      // for messages: "mean squared error"
    LossInput input;
    LossParam param;
};

// Everything one call of a loss kernel gets; pointers are device memory of
// the backend running it. The kernel writes dy = dL/dy [n][k] and the loss,
// one float at *loss, ordered on s.
struct LossArgs {
    Backend *be = nullptr;
    Stream *s = nullptr;
    // Rows and values per row: batch and outputs, or for a sequence output
    // [batch][T][F] n = batch * T rows of k = F values.
    int64_t n = 0, k = 0;
    // Sequence outputs (sequence true): T steps per sample, and the valid
    // steps per sample ([batch], device memory, or null for full length). A
    // label loss ignores the rows of padded steps (t >= lengths[sample])
    // and the rows labelled -1, and averages over the others (0 when none
    // is left; math.h label_row_counts).
    bool sequence = false;
    int64_t steps = 1;
    const int32_t *lengths = nullptr;
    float *scale = nullptr;  // one device float of scratch (the averaging factor)
    const float *y = nullptr;         // outputs [n][k]
    const float *targets = nullptr;   // [n][k] (LossInput::targets)
    const int32_t *labels = nullptr;  // [n], validated on upload (LossInput::labels; -1 ignores a row of a sequence)
    float param = 0.0f;               // the loss parameter, when it has one
    float *dy = nullptr;
    float *loss = nullptr;
};

using LossKernel = void (*)(const LossArgs &a);

// The descriptor of a kind.
const LossDesc &loss_desc(LossKind kind);
// The descriptor of a public id, or null when no loss has it.
const LossDesc *find_loss(int32_t id);
// The descriptor of a public id; throws SNN_ERR_INVALID_ARGUMENT naming the
// known ones when no loss has it.
const LossDesc &loss_of(int32_t id);
// The loss's parameter; throws SNN_ERR_INVALID_ARGUMENT when it has none.
const LossParam &loss_param(const LossDesc &d);
// Throws SNN_ERR_INVALID_ARGUMENT when the loss has no parameter or `value`
// is not one it accepts (NaN, infinite, out of range); the message names the
// loss, the parameter and the range.
void check_loss_param(const LossDesc &d, double value);

}  // namespace snn
