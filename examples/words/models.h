/* The networks of examples/words (--task, --model), shared with
 * bench/words_bench.c, which times their training steps. Each takes T token
 * ids from a vocabulary of V (filled in by words_spec).
 *
 *   lang: the language of a word, one of the 9 (a vector of 9 logits);
 *   lm:   the next character at every step (a sequence of T x V logits).
 *
 * The transformers are two pre-layernorm blocks: x + attention(layernorm(x)),
 * then x + dense(gelu(dense(layernorm(x)))), with a final layernorm. */
#ifndef WORDS_MODELS_H
#define WORDS_MODELS_H

#include <stdio.h>
#include <string.h>

#include "wordlists.h"

/* The words each language contributes (fewer if a language has fewer):
 * 72 000 training words in all, 1 125 batches of 64 per epoch. */
#define WORDS_TRAIN_PER_LANGUAGE 8000
#define WORDS_TEST_PER_LANGUAGE 1000

/* lstm: embedding 32, one LSTM layer of 128 (its final state for lang). */
#define WORDS_LSTM_LANG_SPEC \
    "input tokens %d vocab=%d; embedding 32 pad=0; lstm 128 last; dense %d"
#define WORDS_LSTM_LM_SPEC "input tokens %d vocab=%d; embedding 32 pad=0; lstm 128; dense %d"

/* transformer: width 64, 4 heads, feed-forward 256; lang takes the mean
 * over the word's steps, lm is causal. The first %s is the attention's
 * option (causal or nothing), repeated for the second block. */
#define WORDS_TRANSFORMER_BLOCKS                                                      \
    "embedding 64 pad=0; posembed name=x0; "                                          \
    "layernorm; attention heads=4%s; add x0 name=x1; "                                \
    "layernorm; dense 256 gelu; dense 64; add x1 name=x2; "                           \
    "layernorm; attention heads=4%s; add x2 name=x3; "                                \
    "layernorm; dense 256 gelu; dense 64; add x3; layernorm; "
#define WORDS_TRANSFORMER_LANG_SPEC \
    "input tokens %d vocab=%d; " WORDS_TRANSFORMER_BLOCKS "seqpool mean; dense %d"
#define WORDS_TRANSFORMER_LM_SPEC "input tokens %d vocab=%d; " WORDS_TRANSFORMER_BLOCKS "dense %d"

/* The spec of `model` ("lstm" or "transformer") for a task, with T steps
 * and V token ids, in buf; returns 0 for an unknown model or a buf too
 * small. */
static inline int words_spec(char *buf, size_t size, words_task task, const char *model,
                             int steps, int vocab) {
    int n;
    if (!strcmp(model, "lstm"))
        n = task == WORDS_TASK_LANG
                ? snprintf(buf, size, WORDS_LSTM_LANG_SPEC, steps, vocab, WORDS_LANGUAGES)
                : snprintf(buf, size, WORDS_LSTM_LM_SPEC, steps, vocab, vocab);
    else if (!strcmp(model, "transformer"))
        n = task == WORDS_TASK_LANG
                ? snprintf(buf, size, WORDS_TRANSFORMER_LANG_SPEC, steps, vocab, "", "",
                           WORDS_LANGUAGES)
                : snprintf(buf, size, WORDS_TRANSFORMER_LM_SPEC, steps, vocab, " causal",
                           " causal", vocab);
    else
        return 0;
    return n > 0 && (size_t)n < size;
}

#endif
