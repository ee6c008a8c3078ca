// lstm H [bidirectional] [last] [nobias]: torch.nn.LSTM(F, H, batch_first=True)
// over a sequence [T][F] from a zero state, one layer, run on
// pack_padded_sequence(x, lengths) (only steps t < length run; outputs at
// padded steps are 0). Per step, gates i, f, g, o:
//   i = sigmoid(W_ii x + b_ii + W_hi h + b_hi), f, o alike; g with tanh
//   c' = f c + i g ; h' = o tanh(c')
// Output: the hidden states [T][H] ([T][2H] bidirectional: forward, then
// reverse features), or with `last` PyTorch's h_n [H] ([2H]): the forward
// state after step length - 1, the reverse one after step 0.
// Parameters per direction weight_ih_l0 [4H][F], weight_hh_l0 [4H][H],
// bias_ih_l0 [4H], bias_hh_l0 [4H], then the same with suffix _reverse;
// all uniform in [-1/sqrt(H), 1/sqrt(H)]. The layout of parameters, kept
// values (per direction: gates [T][n][4H], c [T][n][H], h [T][n][H]) and
// workspace is ops/recurrent.h's. Keeps its input.
//
// The CUDA kernels are cuBLAS products and a fused gate kernel per step
// rather than cuDNN's RNN API: cuDNN wants its own packed-sequence layout
// (time-major data sorted by length, or padded with its own descriptors per
// batch size), a weight space laid out by cuDNN, and reserve and work
// spaces sized per call by the library, where snn keeps [batch][T][F] in its
// arena, PyTorch's parameter layout in the flat vector, and every buffer
// planned once; and the gate kernels, unlike cuDNN, run in the emulated
// suite against the CPU on every commit.
#include "ops/op.h"
#include "ops/recurrent.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) { recurrent_parse(st, l, "lstm"); }
std::string describe(const Layer &l, const std::vector<Layer> &) { return recurrent_describe(l, "lstm"); }

}  // namespace

const OpDesc op_lstm{"lstm", {"lstm"}, parse, recurrent_infer, describe, recurrent_init, nullptr, nullptr, true, true, false, true};

}  // namespace snn
