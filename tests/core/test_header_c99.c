/* include/snn.h compiles as strict C99 (built with -std=c99 -Wall -Wextra
 * -pedantic -Werror) and the library loaded agrees with the header. */
#include <stdio.h>
#include <string.h>

#include "snn.h"

int main(void) {
    int failures = 0;
    if (snn_version_number() != SNN_VERSION_NUMBER) {
        fprintf(stderr, "library version %d, header %d\n", snn_version_number(), SNN_VERSION_NUMBER);
        failures++;
    }
    if (strcmp(snn_version_string(), SNN_VERSION_STRING) != 0) failures++;
    if (SNN_VERSION_NUMBER != SNN_VERSION_MAJOR * 1000000 + SNN_VERSION_MINOR * 1000 + SNN_VERSION_PATCH)
        failures++;
    if (!snn_has_feature("cpu") || snn_has_feature("openblas") != SNN_TEST_OPENBLAS || snn_has_feature("cp") ||
        snn_has_feature("") || snn_has_feature(NULL))
        failures++;
    if (strcmp(snn_status_string(SNN_OK), "success") != 0) failures++;
    if (strcmp(snn_status_string(12345), "unknown status") != 0) failures++;
    if (strcmp(snn_last_error(), "") != 0) failures++;
    printf("snn %s, features: %s\n", snn_version_string(), snn_build_features());
    return failures ? 1 : 0;
}
