// The host's log callback.
#pragma once

#include <stdint.h>

namespace snn {

// Sends a message to the host's log callback, if one is installed, with no
// lock held during the call; an exception the callback throws is dropped.
void log_message(int32_t level, const char *message) noexcept;

}  // namespace snn
