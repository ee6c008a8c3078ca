/* Process-wide settings: the log callback receives each failure's message on
 * the failing thread, the thread bound reads back, and the finite check turns
 * a NaN input into a status. */
#include <stdio.h>
#include <string.h>

#include "snn.h"

static int failures = 0;
#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);        \
            failures++;                                                                \
        }                                                                              \
    } while (0)

static char last_message[512];
static int last_level = -1, calls = 0;

static void on_log(void *user, int32_t level, const char *message) {
    (*(int *)user)++;
    last_level = level;
    snprintf(last_message, sizeof last_message, "%s", message);
}

int main(void) {
    /* The log callback sees exactly the failures, with their messages. */
    EXPECT(snn_set_log_callback(on_log, &calls) == SNN_OK);
    snn_model *m = NULL;
    EXPECT(snn_model_create("input 4; dense 3 rleu", &m) == SNN_ERR_SPEC);
    EXPECT(m == NULL);
    EXPECT(calls == 1);
    EXPECT(last_level == SNN_LOG_ERROR);
    EXPECT(strstr(last_message, "snn_model_create") != NULL);
    EXPECT(strstr(last_message, "rleu") != NULL);
    EXPECT(strcmp(last_message, snn_last_error()) == 0);
    EXPECT(snn_model_create("input 4; dense 3 relu", &m) == SNN_OK);
    EXPECT(calls == 1); /* success logs no error */
    EXPECT(snn_set_log_callback(NULL, NULL) == SNN_OK);
    EXPECT(snn_model_create("", NULL) != SNN_OK);
    EXPECT(calls == 1); /* removed */

    /* The thread bound reads back and rejects nonsense. */
    EXPECT(snn_set_num_threads(2) == SNN_OK);
    EXPECT(snn_get_num_threads() == 2);
    EXPECT(snn_set_num_threads(1) == SNN_OK);
    EXPECT(snn_get_num_threads() == 1);
    EXPECT(snn_set_num_threads(0) == SNN_ERR_INVALID_ARGUMENT);
    EXPECT(snn_get_num_threads() == 1);

    /* With the finite check on, NaN inputs are refused; off, they pass through. */
    snn_forward_cache *f = NULL;
    EXPECT(snn_preallocate(m, 1, &f) == SNN_OK);
    float x[4] = {1.0f, 0.0f / 0.0f, 2.0f, 3.0f};
    EXPECT(snn_set_check_finite(1) == SNN_OK);
    EXPECT(snn_set_inputs(f, x, 4) == SNN_ERR_NOT_FINITE);
    EXPECT(strstr(snn_last_error(), "inputs[1]") != NULL);
    EXPECT(snn_set_check_finite(0) == SNN_OK);
    EXPECT(snn_set_inputs(f, x, 4) == SNN_OK);

    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
    printf("%s\n", failures ? "FAILED" : "settings behave as documented");
    return failures ? 1 : 0;
}
