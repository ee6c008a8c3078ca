// include/snn.h compiles as C++ (-Wall -Wextra -pedantic -Werror) and its
// handles work from C++ code.
#include <cstdio>
#include <memory>

#include "snn.h"

int main() {
    snn_model *raw = nullptr;
    if (snn_model_create("input 3; dense 2", &raw) != SNN_OK) return 1;
    std::unique_ptr<snn_model, void (*)(snn_model *)> model(raw, snn_model_destroy);
    size_t count = 0;
    if (snn_parameter_count(model.get(), &count) != SNN_OK || count != 8) return 1;
    std::printf("C++ sees %zu parameters\n", count);
    return 0;
}
