// Everything that crosses between a caller's buffers and a model or cache:
// parameters, state, inputs, outputs, targets, labels. Each function holds
// the invariants of the fields it writes (batches, pass records, write
// counts), so the C boundary only checks its arguments and calls one of them.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "engine/network.h"

namespace snn {

// What a model's state can hold, the one rule of snn_set_state and of model
// files: every count (num_batches_tracked) is a whole number in [0, 2^24]
// with a clear sign bit, what a file's I64 count reads back as; running
// statistics, like parameters, may be any float. Returns the first value of
// `state` (a host copy of net's state vector, named `what` in the text) that
// breaks it, described, or "" when none does.
std::string state_problem(const Network &net, const float *state, const char *what);

}  // namespace snn
