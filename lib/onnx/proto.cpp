// Placeholder until the wire layer lands on this branch.
#include "onnx/proto.h"
