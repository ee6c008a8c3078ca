// An op is one descriptor: how the spec names it and its options, its shape
// inference and the layout of its parameters and state (OpDesc, in
// lib/ops/<op>.cpp), and its forward and backward passes on each backend
// (OpKernels, in lib/cpu/<op>.cpp and cuda/<op>.cu). The registry is
// core/op_list.h. See docs/adding-an-op.md.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "core/backend.h"
#include "ops/spec.h"
#include "ops/spec_text.h"

namespace snn {

constexpr int kMaxOpInputs = 2;

// Everything one call of an op's kernel gets. Pointers are device memory of
// the backend running it. A backward call gets the inputs, output and aux as
// the forward pass left them; dx[j] never aliases dy, x or y.
struct OpArgs {
    Backend *be = nullptr;
    Stream *s = nullptr;
    const Layer *l = nullptr;
    void *plan = nullptr;        // from OpKernels::plan, or null
    void *workspace = nullptr;   // at least the plan's workspace_bytes
    int64_t n = 0;               // batch
    // Forward: the cache's mode. Backward: the mode of the forward pass
    // being differentiated.
    bool training = true;
    // The precision of the pass's products (core/backend.h). Backward: the
    // precision of the forward pass being differentiated. Only kernels whose
    // table lists it (OpKernels::precisions) are called with a low one.
    Precision precision = Precision::f32;
    uint64_t key = 0;            // random stream of this layer in this pass (dropout)
    // Valid steps per sample, [n] int32 in [1, T] of the backend's memory
    // (padding at the end), or null when every sample has its full T steps
    // (snn_set_lengths). Only models with a sequence input have them; every
    // sequence node keeps the input's T steps then.
    const int32_t *lengths = nullptr;
    const float *x[kMaxOpInputs] = {nullptr, nullptr};  // inputs, [n][...]
    float *y = nullptr;          // output, [n][out]
    const float *params = nullptr;  // the whole parameter vector (use l->weight_offset, ...)
    float *state = nullptr;      // the whole state vector (use l->state_offset)
    float *aux = nullptr;        // this node's kept values: aux_fixed, then n * aux_per_sample
    // Backward only.
    float *dy = nullptr;         // dL/dy; the kernel may overwrite it
    float *dx[kMaxOpInputs] = {nullptr, nullptr};  // written (not accumulated) where non-null
    float *grads = nullptr;      // the whole gradient vector: the node's slices are written
};

// An op's kernels on one backend.
struct OpKernels {
    // Optional: what a cache needs made once (descriptors, chosen
    // algorithms), for batches up to max_batch; *workspace_bytes receives the
    // scratch one call needs at that precision (OpArgs::precision).
    void *(*plan)(Backend &be, Stream *s, const Layer &l, int64_t max_batch, bool backward, Precision precision,
                  size_t *workspace_bytes) = nullptr;
    void (*release)(Backend &be, void *plan) = nullptr;  // must not throw
    void (*forward)(const OpArgs &a) = nullptr;
    // Writes dx[j] where non-null and the node's parameter gradients.
    void (*backward)(const OpArgs &a) = nullptr;
    // Bit p set: forward and backward honour Precision p (precision_bits).
    // An op with products (OpDesc::products) runs a low precision only where
    // its kernels list it; the others compute float32 at every precision.
    uint32_t precisions = 1u;
};

constexpr uint32_t precision_bit(Precision p) { return 1u << uint32_t(p); }
constexpr uint32_t kAllPrecisions = (1u << kPrecisionCount) - 1u;

// An op's description, independent of the backend.
struct OpDesc {
    const char *name;                 // for messages and docs
    std::vector<const char *> words;  // spec keywords that start it
    // Fills the node's attributes from its statement (st[0] is the keyword;
    // name=ID and from=ID are already removed). `names` are the named nodes before it.
    // An option given twice is refused after it (check_repeated_options).
    void (*parse)(const Statement &st, Layer &l, const NameIndex &names);
    // Sets l.out, the counts of parameters and state, l.tensors (offsets
    // relative to the node's first parameter / state value), keeps_*, aux_*
    // and alias. l.in is set; layers[index] is l. Throws SNN_ERR_SHAPE.
    void (*infer)(Layer &l, const std::vector<Layer> &layers, size_t index);
    // The canonical text of the node (without name=).
    std::string (*describe)(const Layer &l, const std::vector<Layer> &layers);
    // Optional: initial parameters and state for ops that do not take init=
    // (each pointer at the node's slice, or null when not to be written).
    // `seed` starts the node's own random stream (core/rng.h) for
    // parameters drawn at random.
    void (*init)(const Layer &l, uint64_t seed, float *params, float *state);
    // Optional: refuses a batch the op cannot run (SNN_ERR_BATCH), e.g.
    // batch statistics of one value per channel in training mode.
    void (*check)(const Layer &l, int64_t n, bool training);
    // Kernels written on Backend primitives alone, which every backend runs;
    // null when each backend has its own.
    const OpKernels *generic;
    // The op takes sequences [T][F] as inputs (others refuse them with
    // SNN_ERR_SHAPE before their infer runs); and takes nothing else
    // (requires_sequence: recurrent layers, attention, conv1d, seqpool); it
    // takes token ids (embedding alone; then nothing else).
    bool sequences = false;
    bool requires_sequence = false;
    bool tokens = false;
    // The op's work is matrix products (dense, convolutions, attention,
    // recurrent layers): a low precision applies to it.
    bool products = false;
};

const OpDesc &op_desc(OpKind kind);
size_t op_count();
// The op whose keyword is `word`, or null.
const OpDesc *op_by_word(const std::string &word, OpKind *kind);
// The kernels of `kind` on `be`, or null when that backend lacks the op.
const OpKernels *op_kernels(Backend &be, OpKind kind);

#define SNN_DECLARE_OP(name) extern const OpDesc op_##name;
SNN_OP_LIST(SNN_DECLARE_OP)
#undef SNN_DECLARE_OP

}  // namespace snn
