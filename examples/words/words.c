/* Words: which language is a word in, and what do words of a language look
 * like? Two tasks on Debian's word lists of nine languages, with a
 * recurrent network and a small transformer for each.
 *
 *   build/examples/words/words                                  (lang, lstm)
 *   build/examples/words/words --task lang --model transformer
 *   build/examples/words/words --task lm --model lstm           (a language model)
 *   build/examples/words/words --export DIR                     (the data, for PyTorch)
 *   build/examples/words/words --start lang_lstm.onnx           (a PyTorch model: fine-tune it)
 *   build/examples/words/words --help
 *
 * --task lang: language identification. The network reads a word as a
 *   sequence of character ids and gives one of nine languages; the program
 *   prints the test accuracy per language and a confusion matrix.
 * --task lm: a character language model conditioned on the language. The
 *   network reads the language's start token and the word's characters and
 *   predicts, at every step, the next character (the end token after the
 *   last); the program prints the bits per character of held-out words and
 *   samples new words for every language.
 *
 * The data (wordlists.c) are token ids [word][T] with each word's length:
 * words are shorter than T, the steps after a word's length are padding,
 * which the sequence layers and the loss skip (snn_set_lengths). The
 * training loop gathers each mini-batch by index from the whole training
 * set (snn_set_tokens_gather, snn_set_lengths_gather,
 * snn_set_labels_gather), so it copies no batch and allocates nothing:
 * every buffer was preallocated before it.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
#include <direct.h>
#define mkdir(path, mode) _mkdir(path)
#endif

#include "example.h"
#include "models.h"
#include "snn.h"
#include "wordlists.h"

#define STEPS 24        /* T: words of up to 23 code points, plus the start token */
#define EVAL_BATCH 500  /* test words per forward pass */
#define LOG_EVERY 200   /* batches between progress lines when not on a terminal */
#define DEFAULT_DICT_DIR "/usr/share/dict"

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct {
    words_task task;
    const char *model; /* "lstm" or "transformer" */
    long epochs;       /* 0: the model's default */
    long batch;
    double lr;
    unsigned long long seed;
    const char *dict_dir;
    long train_per_language;
    long test_per_language;
    long threads; /* 0: the library's default */
    const char *device;
    const char *export_dir;
    const char *start;       /* train (or with --epochs 0 only test) this model file or ONNX file */
    const char *export_onnx; /* write the trained model there as ONNX */
    long samples;       /* generated words per language (lm) */
    double temperature; /* of the sampling */
    int quiet;
} options;

/* Epochs per task and model: each trains in under 3 minutes on 2 cores. */
static long default_epochs(words_task task, const char *model) {
    if (!strcmp(model, "transformer")) return 2;
    return task == WORDS_TASK_LANG ? 4 : 3;
}

static void usage(FILE *to) {
    fprintf(to,
            "usage: words [options]\n"
            "\n"
            "Trains a sequence model on the words of nine languages (Debian's word lists)\n"
            "with Adam on shuffled mini-batches, and prints its test results.\n"
            "\n"
            "  --task T       lang: which language a word is in (accuracy per language,\n"
            "                 confusion matrix); lm: a character language model given the\n"
            "                 language (bits per character, sampled words). Default lang\n"
            "  --model M      lstm (embedding 32, LSTM 128) or transformer (embedding and\n"
            "                 learned positions of 64, two pre-layernorm blocks of 4-head\n"
            "                 attention and a 256-unit gelu layer). Default lstm\n"
            "  --epochs N     passes over the training words (default: lstm 4 for lang,\n"
            "                 3 for lm; transformer 2; with --start 0: test only)\n"
            "  --batch N      mini-batch size (default 64)\n"
            "  --lr X         Adam's learning rate (default 0.002)\n"
            "  --seed N       seed of the initial parameters, the shuffling and the\n"
            "                 sampling (default 1); the train/test split is fixed\n"
            "  --dict DIR     where the word lists are (default " DEFAULT_DICT_DIR ")\n"
            "  --train-per-language N  training words per language (default 8000; fewer\n"
            "                 if a language has fewer)\n"
            "  --test-per-language N   test words per language (default 1000)\n"
            "  --threads N    CPU threads (default: SNN_NUM_THREADS, else all cores)\n"
            "  --device D     cpu (default) or gpu (GPU 0: the training words are\n"
            "                 uploaded once and batches gathered there)\n"
            "  --samples N    words generated per language by lm (default 8)\n"
            "  --temperature X  of the sampling (default 0.8)\n"
            "  --export DIR   write the encoded split to DIR/words.bin and the initial\n"
            "                 parameters of the network (--task, --model, --seed) to\n"
            "                 DIR/TASK_MODEL_seedS.safetensors, and exit: the PyTorch twin\n"
            "                 bench/words_torch.py trains on them\n"
            "  --start FILE   train the model of FILE instead of a fresh one: an snn model\n"
            "                 file, or an ONNX file (FILE.onnx; bench/words_torch.py --onnx\n"
            "                 writes one from PyTorch) whose input is the task's token ids\n"
            "                 and output its logits; with --epochs 0, only test it\n"
            "  --export-onnx PATH  write the trained model to PATH as an ONNX file\n"
            "  --quiet        no progress, no tables: one line per epoch\n"
            "  --help         this text\n"
            "\n"
            "Exit status: 0 success, 1 failure (missing word lists, I/O), 2 bad options.\n");
}

static options parse_options(int argc, char **argv) {
    options o = {WORDS_TASK_LANG, "lstm", 0, 64, 2e-3, 1, DEFAULT_DICT_DIR,
                 WORDS_TRAIN_PER_LANGUAGE, WORDS_TEST_PER_LANGUAGE, 0, "cpu", NULL, NULL, NULL, 8, 0.8, 0};
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(arg, "--quiet")) {
            o.quiet = 1;
            continue;
        }
        /* Every other option takes a value: "--name value" or "--name=value". */
        char name[32];
        const char *value = NULL;
        const char *eq = strchr(arg, '=');
        if (strncmp(arg, "--", 2) != 0) example_bad_option("is not an option", arg, NULL);
        if (eq) {
            size_t len = (size_t)(eq - arg);
            if (len >= sizeof name) example_bad_option("is not an option", arg, NULL);
            memcpy(name, arg, len);
            name[len] = '\0';
            value = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", arg);
            if (i + 1 >= argc) example_bad_option("needs a value", arg, NULL);
            value = argv[++i];
        }
        if (!strcmp(name, "--task")) {
            if (strcmp(value, "lang") && strcmp(value, "lm")) example_bad_option("expects lang or lm", name, value);
            o.task = !strcmp(value, "lang") ? WORDS_TASK_LANG : WORDS_TASK_LM;
        } else if (!strcmp(name, "--model")) {
            if (strcmp(value, "lstm") && strcmp(value, "transformer"))
                example_bad_option("expects lstm or transformer", name, value);
            o.model = value;
        } else if (!strcmp(name, "--epochs")) {
            o.epochs = example_parse_long(name, value, 0, 1000);
        } else if (!strcmp(name, "--batch")) {
            o.batch = example_parse_long(name, value, 1, 100000);
        } else if (!strcmp(name, "--lr")) {
            o.lr = example_parse_double(name, value, 0.0, 10.0);
        } else if (!strcmp(name, "--seed")) {
            o.seed = (unsigned long long)example_parse_long(name, value, 0, 2147483647L);
        } else if (!strcmp(name, "--dict")) {
            o.dict_dir = value;
        } else if (!strcmp(name, "--train-per-language")) {
            o.train_per_language = example_parse_long(name, value, 1, 100000000L);
        } else if (!strcmp(name, "--test-per-language")) {
            o.test_per_language = example_parse_long(name, value, 1, 100000000L);
        } else if (!strcmp(name, "--threads")) {
            o.threads = example_parse_long(name, value, 1, 1024);
        } else if (!strcmp(name, "--device")) {
            if (strcmp(value, "cpu") && strcmp(value, "gpu")) example_bad_option("expects cpu or gpu", name, value);
            o.device = value;
        } else if (!strcmp(name, "--samples")) {
            o.samples = example_parse_long(name, value, 0, 1000);
        } else if (!strcmp(name, "--temperature")) {
            o.temperature = example_parse_double(name, value, 0.0, 100.0);
        } else if (!strcmp(name, "--export")) {
            o.export_dir = value;
        } else if (!strcmp(name, "--start")) {
            o.start = value;
        } else if (!strcmp(name, "--export-onnx")) {
            o.export_onnx = value;
        } else {
            example_bad_option("is not an option", name, NULL);
        }
    }
    if (o.epochs == 0 && !o.start) o.epochs = default_epochs(o.task, o.model);
    return o;
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

#define CHECK(call)                                                                    \
    do {                                                                               \
        snn_status status_ = (call);                                                   \
        if (status_ != SNN_OK) {                                                       \
            fprintf(stderr, "\nwords: %s\n", snn_last_error());                        \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static word_data load_words(const options *o) {
    words_options wo = {o->dict_dir, STEPS, (size_t)o->train_per_language,
                        (size_t)o->test_per_language};
    word_data data;
    char error[4096];
    words_status status = words_load(&wo, &data, error, sizeof error);
    if (status == WORDS_OK) return data;
    fprintf(stderr, "words: %s\n", error);
    if (status == WORDS_ERR_OPEN) {
        fprintf(stderr, "\nThe word lists were not found in %s. Install them with\n    apt-get install",
                o->dict_dir);
        for (int l = 0; l < WORDS_LANGUAGES; ++l) fprintf(stderr, " %s", words_languages[l].package);
        fprintf(stderr, "\nor pass --dict DIR, a directory holding their files (");
        for (int l = 0; l < WORDS_LANGUAGES; ++l)
            fprintf(stderr, "%s%s", l ? ", " : "", words_languages[l].file);
        fprintf(stderr, ").\n");
    }
    exit(1);
}

static void print_data_summary(const word_data *d, const options *o) {
    printf("%-11s %9s %9s %7s %8s %8s %9s %9s %9s %8s\n", "language", "lines", "capitals",
           "other", "too long", "repeated", "ambiguous", "kept", "train", "test");
    size_t too_long = 0;
    for (int l = 0; l < WORDS_LANGUAGES; ++l) {
        const words_counts *c = &d->counts[l];
        printf("%-11s %9zu %9zu %7zu %8zu %8zu %9zu %9zu %9zu %8zu\n", words_languages[l].name,
               c->lines, c->capitals, c->other, c->too_long, c->duplicates, c->ambiguous, c->kept,
               c->train_available, c->test_available);
        too_long += c->too_long;
    }
    printf("\nkept: words of lowercase letters only (dropped: with a capital, or another\n"
           "character), of at most %d code points (%zu longer ones dropped), in one\n"
           "language's list only; split 90/10 into training and test words. Used: %zu\n"
           "training and %zu test words per language, %d token ids (%d characters), %zu test\n"
           "characters never seen in training (%s)\n\n",
           STEPS - 1, too_long, d->train.count / WORDS_LANGUAGES, d->test.count / WORDS_LANGUAGES,
           (int)d->vocab, (int)(d->vocab - WORDS_FIRST_CHAR), d->unknown_chars, o->dict_dir);
}

/* ------------------------------------------------------------------------ */
/* Evaluation                                                               */
/* ------------------------------------------------------------------------ */

typedef struct {
    long confusion[WORDS_LANGUAGES][WORDS_LANGUAGES]; /* lang: [true][predicted] */
    double nats[WORDS_LANGUAGES];                       /* lm: summed cross-entropy */
    long steps[WORDS_LANGUAGES];                        /* lm: predicted tokens */
    double accuracy;                                    /* lang */
    double bits_per_char;                               /* lm */
} results;

/* -log softmax(logits)[label] over n logits, in double. */
static double cross_entropy(const float *logits, int32_t n, int32_t label) {
    float max = logits[0];
    for (int32_t k = 1; k < n; ++k)
        if (logits[k] > max) max = logits[k];
    double sum = 0.0;
    for (int32_t k = 0; k < n; ++k) sum += exp((double)logits[k] - max);
    return log(sum) - ((double)logits[label] - max);
}

/* Runs the model over the test words in batches of the cache's maximum.
 * lang: the confusion matrix and accuracy; lm: the cross-entropy of every
 * predicted token (the characters and the end token) in bits. */
static results evaluate(const snn_model *model, snn_forward_cache *cache, const words_batch_data *test,
                        const word_split *words, words_task task, int32_t vocab, float *logits) {
    results r;
    memset(&r, 0, sizeof r);
    int64_t batch = 0, max_batch = 0;
    CHECK(snn_cache_batch(cache, &batch, &max_batch));
    const size_t T = (size_t)test->steps;
    const size_t outputs = task == WORDS_TASK_LANG ? WORDS_LANGUAGES : T * (size_t)vocab;
    long correct = 0;
    for (size_t start = 0; start < test->count; start += (size_t)max_batch) {
        size_t nb = test->count - start < (size_t)max_batch ? test->count - start : (size_t)max_batch;
        CHECK(snn_cache_set_batch(cache, (int64_t)nb));
        CHECK(snn_set_tokens(cache, test->tokens + start * T, nb * T));
        CHECK(snn_set_lengths(cache, test->lengths + start, nb));
        CHECK(snn_forward(cache, model));
        CHECK(snn_get_outputs(cache, logits, nb * outputs));
        for (size_t i = 0; i < nb; ++i) {
            const int language = words->language[start + i];
            const float *y = logits + i * outputs;
            if (task == WORDS_TASK_LANG) {
                int best = 0;
                for (int c = 1; c < WORDS_LANGUAGES; ++c)
                    if (y[c] > y[best]) best = c;
                r.confusion[language][best] += 1;
                correct += best == language;
                continue;
            }
            const int32_t *labels = test->labels + (start + i) * T;
            for (int32_t t = 0; t < test->lengths[start + i]; ++t) {
                r.nats[language] += cross_entropy(y + (size_t)t * (size_t)vocab, vocab, labels[t]);
                r.steps[language] += 1;
            }
        }
    }
    double nats = 0.0;
    long steps = 0;
    for (int l = 0; l < WORDS_LANGUAGES; ++l) nats += r.nats[l], steps += r.steps[l];
    r.accuracy = (double)correct / (double)test->count;
    r.bits_per_char = steps ? nats / (double)steps / log(2.0) : 0.0;
    return r;
}

static void print_language_report(const results *r) {
    const char *names[WORDS_LANGUAGES];
    for (int l = 0; l < WORDS_LANGUAGES; ++l) names[l] = words_languages[l].name;
    example_print_confusion("language", names, WORDS_LANGUAGES, 10, &r->confusion[0][0]);
}

static void print_bits_report(const results *r) {
    printf("\n%-12s %14s %12s\n", "language", "bits per char", "predicted");
    for (int l = 0; l < WORDS_LANGUAGES; ++l)
        printf("%d %-10s %14.3f %12ld\n", l, words_languages[l].name,
               r->steps[l] ? r->nats[l] / (double)r->steps[l] / log(2.0) : 0.0, r->steps[l]);
}

/* ------------------------------------------------------------------------ */
/* Sampling words from the language model                                   */
/* ------------------------------------------------------------------------ */

/* Draws the next token from softmax(logits / temperature) over the tokens
 * a word can continue with: the characters and the end token. */
static int32_t sample_token(const float *logits, int32_t vocab, double temperature, uint64_t *rng) {
    float max = logits[WORDS_END];
    for (int32_t k = WORDS_FIRST_CHAR; k < vocab; ++k)
        if (logits[k] > max) max = logits[k];
    double sum = exp((logits[WORDS_END] - max) / temperature);
    for (int32_t k = WORDS_FIRST_CHAR; k < vocab; ++k) sum += exp((logits[k] - max) / temperature);
    double u = (double)(example_next_random(rng) >> 11) * 0x1.0p-53 * sum;
    double acc = exp((logits[WORDS_END] - max) / temperature);
    if (u < acc) return WORDS_END;
    for (int32_t k = WORDS_FIRST_CHAR; k < vocab; ++k) {
        acc += exp((logits[k] - max) / temperature);
        if (u < acc) return k;
    }
    return vocab - 1;
}

/* Generates `per_language` words of every language at once: each row of
 * the batch starts with its language's start token; step t's output gives
 * token t + 1. Steps after t do not change step t's output (the LSTM reads
 * forwards, the transformer is causal), so they are left as padding. */
static void generate(const snn_model *model, const word_data *d, long per_language,
                     double temperature, unsigned long long seed) {
    const size_t T = (size_t)d->steps, V = (size_t)d->vocab;
    const size_t n = (size_t)per_language * WORDS_LANGUAGES;
    snn_forward_cache *cache = NULL;
    CHECK(snn_preallocate(model, (int64_t)n, &cache));
    CHECK(snn_cache_set_training(cache, 0));
    int32_t *tokens = calloc(n * T, sizeof *tokens);
    float *logits = example_malloc(n * T * V * sizeof *logits);
    char *done = calloc(n, 1);
    if (!tokens || !done) {
        fprintf(stderr, "words: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; ++i) tokens[i * T] = WORDS_START((int32_t)(i / (size_t)per_language));
    uint64_t rng = seed ^ 0x5A4D504C45ull; /* its own stream, from --seed */
    for (size_t t = 0; t + 1 < T; ++t) {
        CHECK(snn_set_tokens(cache, tokens, n * T));
        CHECK(snn_forward(cache, model));
        CHECK(snn_get_outputs(cache, logits, n * T * V));
        for (size_t i = 0; i < n; ++i) {
            if (done[i]) continue;
            int32_t next = sample_token(logits + (i * T + t) * V, (int32_t)V, temperature, &rng);
            if (next == WORDS_END) done[i] = 1;
            else tokens[i * T + t + 1] = next;
        }
    }
    printf("\nsampled words (temperature %g, seed %llu)\n", temperature, seed);
    for (int l = 0; l < WORDS_LANGUAGES; ++l) {
        printf("%-11s", words_languages[l].name);
        for (long k = 0; k < per_language; ++k) {
            const int32_t *row = tokens + ((size_t)l * (size_t)per_language + (size_t)k) * T;
            char word[4 * STEPS + 1];
            size_t bytes = 0;
            for (size_t t = 1; t < T && row[t] != WORDS_PAD; ++t)
                bytes += words_utf8_encode(d->code_points[row[t]], word + bytes);
            word[bytes] = '\0';
            printf(" %s", word);
        }
        printf("\n");
    }
    free(done);
    free(logits);
    free(tokens);
    snn_forward_cache_destroy(cache);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */
/* ------------------------------------------------------------------------ */

/* --export DIR: the encoded words (DIR/words.bin) and the initial
 * parameters of the network of --task, --model and --seed
 * (DIR/TASK_MODEL_seedS.safetensors), from which bench/words_torch.py
 * --init starts, so that the two train the same network from the same
 * point on the same batches. */
static int export_words(const options *o, const word_data *d, snn_model *model) {
    char path[4096], error[4608];
    mkdir(o->export_dir, 0777); /* may exist; a failure shows when writing */
    snprintf(path, sizeof path, "%s/words.bin", o->export_dir);
    if (words_export(d, path, error, sizeof error) != WORDS_OK) {
        fprintf(stderr, "words: %s\n", error);
        return 1;
    }
    printf("wrote %s: %zu training and %zu test words, %d token ids, %d steps\n", path,
           d->train.count, d->test.count, (int)d->vocab, (int)d->steps);
    snprintf(path, sizeof path, "%s/%s_%s_seed%llu.safetensors", o->export_dir,
             o->task == WORDS_TASK_LANG ? "lang" : "lm", o->model, o->seed);
    CHECK(snn_model_save(model, path));
    printf("wrote %s: the initial parameters\n", path);
    return 0;
}

/* The model of --start: an snn model file, or an ONNX file whose sequence
 * length is the data's; its spec (in spec) must take the task's token ids
 * and give its outputs. */
static snn_model *start_model(const options *o, const word_data *d, char *spec, size_t size) {
    snn_model *model = NULL;
    const size_t length = strlen(o->start);
    if (length > 5 && !strcmp(o->start + length - 5, ".onnx")) {
        snn_onnx_import_options io = {sizeof io, d->steps, 0};
        CHECK(snn_model_import_onnx(o->start, &io, &model));
    } else {
        CHECK(snn_model_load(o->start, &model));
    }
    size_t spec_length = 0;
    CHECK(snn_model_describe(model, spec, size, &spec_length));
    size_t inputs = 0, outputs = 0;
    CHECK(snn_model_input_size(model, &inputs));
    CHECK(snn_model_output_size(model, &outputs));
    const size_t want = o->task == WORDS_TASK_LANG ? WORDS_LANGUAGES : (size_t)d->steps * (size_t)d->vocab;
    char expected[64];
    snprintf(expected, sizeof expected, "input tokens %d vocab=%d;", (int)d->steps, (int)d->vocab);
    if (strncmp(spec, expected, strlen(expected)) != 0 || inputs != (size_t)d->steps || outputs != want) {
        fprintf(stderr,
                "words: --start %s: the network is \"%s\"; the task needs \"%s ...\" with %zu outputs\n",
                o->start, spec, expected, want);
        exit(2);
    }
    return model;
}

/* Moves the model where --device says; returns the device it is on. */
static int32_t move_to_device(const options *o, snn_model *model) {
    if (strcmp(o->device, "gpu")) return SNN_DEVICE_CPU;
    if (snn_to_gpu(model, 0) != SNN_OK) {
        fprintf(stderr, "words: --device gpu: %s\n", snn_last_error());
        exit(1);
    }
    printf("device      GPU 0\n");
    return 0;
}

int main(int argc, char **argv) {
    example_set_program("words");
    options o = parse_options(argc, argv);
    if (o.threads) CHECK(snn_set_num_threads((int32_t)o.threads));
    word_data data = load_words(&o);
    if (!o.quiet) print_data_summary(&data, &o);

    char spec[2048];
    words_spec(spec, sizeof spec, o.task, o.model, data.steps, data.vocab);
    snn_model *model = NULL;
    if (o.start) {
        model = start_model(&o, &data, spec, sizeof spec);
    } else {
        CHECK(snn_model_create(spec, &model));
        CHECK(snn_model_init(model, o.seed));
    }
    if (o.export_dir) {
        int status = export_words(&o, &data, model);
        snn_model_destroy(model);
        words_free(&data);
        return status;
    }
    int32_t device = move_to_device(&o, model);
    size_t parameter_count = 0;
    CHECK(snn_parameter_count(model, &parameter_count));

    words_batch_data train, test;
    if (words_task_data(&data, &data.train, o.task, &train) != WORDS_OK ||
        words_task_data(&data, &data.test, o.task, &test) != WORDS_OK) {
        fprintf(stderr, "words: out of memory\n");
        return 1;
    }
    const size_t n_train = train.count;
    printf("task        %s\nnetwork     %s\nparameters  %zu\ndata        %zu training and %zu "
           "test words, %d steps, %d token ids\ntraining    %ld epoch%s, batch %ld, Adam lr %g, "
           "seed %llu, %d thread%s\n\n",
           o.task == WORDS_TASK_LANG ? "lang (language identification)"
                                     : "lm (character language model)",
           spec, parameter_count, n_train, test.count, (int)data.steps, (int)data.vocab, o.epochs,
           o.epochs == 1 ? "" : "s", o.batch, o.lr, o.seed, (int)snn_get_num_threads(),
           snn_get_num_threads() == 1 ? "" : "s");

    /* Everything the loop needs is allocated here, once. */
    const size_t eval_batch = test.count < EVAL_BATCH ? test.count : EVAL_BATCH;
    const size_t outputs = o.task == WORDS_TASK_LANG ? WORDS_LANGUAGES
                                                     : (size_t)data.steps * (size_t)data.vocab;
    snn_forward_cache *fwd = NULL, *eval = NULL;
    snn_backward_cache *bwd = NULL;
    snn_optimiser *adam = NULL;
    CHECK(snn_preallocate(model, o.batch, &fwd));
    CHECK(snn_preallocate_grads(model, o.batch, &bwd));
    CHECK(snn_preallocate(model, (int64_t)eval_batch, &eval));
    CHECK(snn_cache_set_training(eval, 0));
    CHECK(snn_optimiser_create(model, SNN_OPTIMISER_ADAM, &adam));
    CHECK(snn_optimiser_set(adam, SNN_HP_LEARNING_RATE, o.lr));
    float *logits = example_malloc(eval_batch * outputs * sizeof *logits);
    /* On a GPU the training words are uploaded once; batches are gathered there. */
    snn_dataset *gpu_train = NULL;
    if (device != SNN_DEVICE_CPU)
        CHECK(snn_dataset_create_tokens(device, train.tokens, n_train, (size_t)data.steps,
                                        train.lengths, train.labels, train.labels_per_sample,
                                        &gpu_train));
    int64_t *order = example_malloc(n_train * sizeof *order);
    for (size_t i = 0; i < n_train; ++i) order[i] = (int64_t)i;
    uint64_t rng = o.seed;

    const size_t batches = (n_train + (size_t)o.batch - 1) / (size_t)o.batch;
    example_progress progress = example_progress_start(o.quiet, LOG_EVERY, "steps/s");
    results r;
    double total_seconds = 0.0;
    if (o.epochs == 0) r = evaluate(model, eval, &test, &data.test, o.task, data.vocab, logits);
    for (long epoch = 1; epoch <= o.epochs; ++epoch) {
        example_shuffle(order, n_train, &rng);
        double epoch_loss = 0.0;
        double t0 = example_now_seconds();
        for (size_t b = 0; b < batches; ++b) {
            size_t start = b * (size_t)o.batch;
            size_t n = n_train - start < (size_t)o.batch ? n_train - start : (size_t)o.batch;
            /* The batch's token ids, lengths and labels, gathered by index. */
            if (gpu_train) {
                CHECK(snn_set_inputs_from_dataset(fwd, gpu_train, order + start, n));
                CHECK(snn_set_labels_from_dataset(bwd, gpu_train, order + start, n));
            } else {
                CHECK(snn_set_tokens_gather(fwd, train.tokens, n_train, order + start, n));
                CHECK(snn_set_lengths_gather(fwd, train.lengths, n_train, order + start, n));
                CHECK(snn_set_labels_gather(bwd, train.labels, n_train, order + start, n));
            }
            float loss = 0.0f;
            CHECK(snn_forward(fwd, model));
            CHECK(snn_backprop(bwd, fwd, model, SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
            CHECK(snn_optimiser_step(adam, model, bwd));
            epoch_loss += loss;
            example_progress_show(&progress, epoch, o.epochs, b + 1, batches, epoch_loss / (double)(b + 1),
                                  (double)(b + 1), example_now_seconds() - t0);
        }
        double seconds = example_now_seconds() - t0;
        total_seconds += seconds;
        double t1 = example_now_seconds();
        r = evaluate(model, eval, &test, &data.test, o.task, data.vocab, logits);
        if (o.task == WORDS_TASK_LANG)
            printf("epoch %ld/%ld  loss %.4f  test accuracy %.2f%%", epoch, o.epochs,
                   epoch_loss / (double)batches, 100.0 * r.accuracy);
        else
            printf("epoch %ld/%ld  loss %.4f  test bits per character %.4f", epoch, o.epochs,
                   epoch_loss / (double)batches, r.bits_per_char);
        printf("  train %.1f s (%.1f steps/s)  test %.1f s\n", seconds, (double)batches / seconds,
               example_now_seconds() - t1);
        fflush(stdout);
    }

    if (!o.quiet && o.task == WORDS_TASK_LANG) print_language_report(&r);
    if (!o.quiet && o.task == WORDS_TASK_LM) print_bits_report(&r);
    if (o.task == WORDS_TASK_LM && o.samples > 0)
        generate(model, &data, o.samples, o.temperature, o.seed);
    const double steps_per_second = o.epochs ? (double)(batches * (size_t)o.epochs) / total_seconds : 0.0;
    if (o.task == WORDS_TASK_LANG)
        printf("\nfinal test accuracy %.2f%%", 100.0 * r.accuracy);
    else
        printf("\nfinal test bits per character %.4f", r.bits_per_char);
    printf(" after %ld epoch%s (%zu steps), %.1f s of training, %.1f steps/s\n", o.epochs,
           o.epochs == 1 ? "" : "s", batches * (size_t)o.epochs, total_seconds, steps_per_second);

    if (o.export_onnx) {
        CHECK(snn_model_export_onnx(model, NULL, o.export_onnx));
        printf("wrote %s\n", o.export_onnx);
    }

    free(order);
    free(logits);
    snn_dataset_destroy(gpu_train);
    snn_optimiser_destroy(adam);
    snn_forward_cache_destroy(eval);
    snn_backward_cache_destroy(bwd);
    snn_forward_cache_destroy(fwd);
    snn_model_destroy(model);
    words_task_data_free(&train);
    words_task_data_free(&test);
    words_free(&data);
    return 0;
}
