// gru H [bidirectional] [last] [nobias]: torch.nn.GRU(F, H, batch_first=True)
// over a sequence [T][F] from a zero state, one layer, run on
// pack_padded_sequence(x, lengths) (only steps t < length run; outputs at
// padded steps are 0). Per step, gates r, z, n:
//   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z alike
//   n = tanh(W_in x + b_in + r (W_hn h + b_hn)) ; h' = (1 - z) n + z h
// Output: the hidden states [T][H] ([T][2H] bidirectional: forward, then
// reverse features), or with `last` PyTorch's h_n [H] ([2H]): the forward
// state after step length - 1, the reverse one after step 0.
// Parameters per direction weight_ih_l0 [3H][F], weight_hh_l0 [3H][H],
// bias_ih_l0 [3H], bias_hh_l0 [3H], then the same with suffix _reverse;
// all uniform in [-1/sqrt(H), 1/sqrt(H)]. The layout of parameters, kept
// values (per direction: gates [T][n][3H], hn = W_hn h + b_hn [T][n][H],
// h [T][n][H]) and workspace is ops/recurrent.h's. Keeps its input.
//
// The CUDA kernels are cuBLAS products and a fused gate kernel per step
// rather than cuDNN's RNN API, for the reasons given in ops/lstm.cpp.
#include "ops/op.h"
#include "ops/recurrent.h"

namespace snn {
namespace {

void parse(const Statement &st, Layer &l, const NameIndex &) { recurrent_parse(st, l, "gru"); }
std::string describe(const Layer &l, const std::vector<Layer> &) { return recurrent_describe(l, "gru"); }

}  // namespace

const OpDesc op_gru{"gru", {"gru"}, parse, recurrent_infer, describe, recurrent_init, nullptr, nullptr, true, true, false, true};

}  // namespace snn
