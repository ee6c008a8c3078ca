// What the fuzz targets share with each other and with replay.cpp.
#pragma once

#include <stdio.h>
#include <stdlib.h>

#include "snn.h"

// The status of the last input's main call (the parse or the load). replay.cpp
// checks that every file named "bad-*" was refused.
inline snn_status fuzz_last_status = SNN_OK;

// SNN_ERR_INTERNAL means a bug in snn, not a bad input: a finding, reported
// as a crash so libFuzzer keeps the input.
inline snn_status fuzz_check(snn_status status) {
    if (status == SNN_ERR_INTERNAL) {
        fprintf(stderr, "SNN_ERR_INTERNAL: %s\n", snn_last_error());
        abort();
    }
    return status;
}
