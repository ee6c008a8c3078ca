/* Fashion-MNIST: train a convolutional network to tell ten kinds of clothing
 * apart, then report its accuracy per class and save it.
 *
 *   build/examples/fashion_mnist/fashion_mnist                      (the default CNN)
 *   build/examples/fashion_mnist/fashion_mnist --model simplenns    (SimpleNNs.jl's 1906-parameter net)
 *   build/examples/fashion_mnist/fashion_mnist --spec "input 28x28x1; flatten; dense 128 relu; dense 10"
 *   build/examples/fashion_mnist/fashion_mnist --load fashion_mnist.safetensors   (evaluate only)
 *   build/examples/fashion_mnist/fashion_mnist --export-onnx cnn.onnx   (train, then write ONNX)
 *   build/examples/fashion_mnist/fashion_mnist --load model.onnx   (evaluate a PyTorch model)
 *   build/examples/fashion_mnist/fashion_mnist --start model.onnx  (fine-tune it)
 *   build/examples/fashion_mnist/fashion_mnist --help
 *   mpirun -np 2 build/examples/fashion_mnist/fashion_mnist --distributed
 *       (data-parallel over MPI ranks, when built with libsnn_dist)
 *
 * The data are Debian's dataset-fashion-mnist package (four IDX files, read
 * by idx.c). The training loop is the usual one: each epoch shuffles the
 * indices of the 60 000 training images, and every mini-batch is gathered by
 * index straight from the full data set into the forward cache
 * (snn_set_inputs_gather), so no batch is ever copied by this program. The
 * loop allocates nothing: every buffer was preallocated before it.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "example.h"
#include "idx.h"
#include "models.h"
#include "snn.h"
#ifdef SNN_HAVE_DIST
#include "snn_dist.h"
#endif

#define IMAGE_SIDE 28
#define PIXELS (IMAGE_SIDE * IMAGE_SIDE)
#define CLASSES 10
#define EVAL_BATCH 1000        /* test images per forward pass */
#define LOSS_WINDOW 50         /* batches averaged into one row of the loss CSV */
#define LOG_EVERY 100          /* batches between progress lines when not on a terminal */
#define DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"
#define PARAMS_MAGIC "snn-params 1"
#define PARAMS_MAGIC_STATE "snn-params 2"

static const char *const class_names[CLASSES] = {"T-shirt/top", "Trouser", "Pullover", "Dress",
                                                 "Coat",        "Sandal",  "Shirt",    "Sneaker",
                                                 "Bag",         "Ankle boot"};

static const char *const simplenns_spec = FASHION_MNIST_SIMPLENNS_SPEC;
static const char *const default_spec = FASHION_MNIST_DEFAULT_SPEC;
static const char *const resnet_spec = FASHION_MNIST_RESNET_SPEC;

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct {
    const char *model;   /* "default", "simplenns" or "resnet" */
    const char *spec;    /* overrides model */
    long epochs;         /* 0: the model's default */
    long batch;
    double lr;
    int cosine;          /* learning rate decays to 0 along a cosine over the epochs */
    double weight_decay; /* > 0: AdamW with this decoupled weight decay */
    unsigned long long seed;
    const char *data_dir;
    long threads;        /* 0: the library's default */
    const char *out_dir;
    long limit;          /* 0: the whole data set */
    const char *load;    /* evaluate this saved model instead of training */
    const char *start;   /* train this saved or ONNX model instead of a fresh one */
    const char *export_onnx; /* write the trained (or loaded) model there as ONNX */
    int quiet;
    int distributed;     /* train data-parallel over the MPI ranks */
    const char *device;  /* "cpu", "gpu" or "auto" */
    const char *precision; /* "float32", "bf16" or "fp16" */
} options;

static void usage(FILE *to) {
    fprintf(to,
            "usage: fashion_mnist [options]\n"
            "\n"
            "Trains a CNN on Fashion-MNIST (cross-entropy, Adam, shuffled mini-batches),\n"
            "prints the test accuracy after each epoch, a per-class table and a confusion\n"
            "matrix, and writes the loss curve and the trained parameters to --out.\n"
            "\n"
            "  --model NAME   default (two conv blocks + dense 128, 6 epochs),\n"
            "                 simplenns (SimpleNNs.jl's 1906-parameter CNN, 3 epochs) or\n"
            "                 resnet (three stages of residual blocks with batchnorm,\n"
            "                 dropout before the classifier; 15 epochs, cosine schedule,\n"
            "                 AdamW with weight decay 0.05)\n"
            "  --spec SPEC    any network taking 28x28x1 images to 10 outputs (6 epochs), e.g.\n"
            "                 \"input 28x28x1; flatten; dense 128 relu; dense 10\"\n"
            "  --epochs N     passes over the training set (default: 6, simplenns 3, resnet 15)\n"
            "  --batch N      mini-batch size (default 64)\n"
            "  --lr X         Adam's learning rate (default 0.001, resnet 0.002)\n"
            "  --cosine       decay the learning rate to 0 along a cosine over the epochs\n"
            "                 (the default for resnet)\n"
            "  --weight-decay X  AdamW's decoupled weight decay instead of Adam (default:\n"
            "                 Adam; resnet AdamW 0.05)\n"
            "  --seed N       seed of the initial parameters, the shuffling and dropout (default 1)\n"
            "  --data DIR     directory of the four IDX files, .gz or not\n"
            "                 (default " DEFAULT_DATA_DIR ")\n"
            "  --threads N    CPU threads (default: SNN_NUM_THREADS, else all cores)\n"
            "  --out DIR      where the loss curve (fashion_mnist_loss.csv), the per-epoch\n"
            "                 results (fashion_mnist_epochs.csv) and the trained model\n"
            "                 (fashion_mnist.params and fashion_mnist.safetensors) go\n"
            "                 (default: the current directory)\n"
            "  --limit N      train on the first N images, test on the first N/5\n"
            "  --device D     cpu (default), gpu (GPU 0: the training set is uploaded once\n"
            "                 and batches are gathered on the GPU) or auto (GPU if usable)\n"
            "  --precision P  float32 (default), bf16 (products in bf16, float32\n"
            "                 accumulation and master parameters, as torch.autocast) or\n"
            "                 fp16 (GPUs, with dynamic loss scaling)\n"
            "  --load FILE    evaluate a saved fashion_mnist.params or .safetensors model,\n"
            "                 or an ONNX file (FILE.onnx, e.g. from torch.onnx.export),\n"
            "                 on the test set, without training\n"
            "  --start FILE   train the model of FILE (as --load reads it) instead of a\n"
            "                 fresh one: fine-tuning\n"
            "  --export-onnx PATH  write the trained model (with --load: the loaded one)\n"
            "                 to PATH as an ONNX file, which ONNX Runtime runs\n"
            "  --quiet        no progress, no tables: one line per epoch\n"
            "  --distributed  data-parallel training over the MPI ranks this program was\n"
            "                 started on (mpirun -np N ...): each rank computes the gradient\n"
            "                 of its 1/N of every global batch of --batch images, the\n"
            "                 gradients are averaged, rank 0 reports and saves (batchnorm's\n"
            "                 running statistics are rank 0's own); default\n"
            "                 threads per rank: cores / N\n"
            "  --help         this text\n"
            "\n"
            "Exit status: 0 success, 1 failure (missing data, I/O), 2 bad options.\n");
}

static options parse_options(int argc, char **argv) {
    options o = {"default", NULL, 0, 64, 0.0, 0, -1.0, 1, DEFAULT_DATA_DIR, 0, ".", 0, NULL, NULL, NULL, 0, 0, "cpu", "float32"};
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
        if (!strcmp(arg, "--cosine")) {
            o.cosine = 1;
            continue;
        }
        if (!strcmp(arg, "--distributed")) {
#ifndef SNN_HAVE_DIST
            example_bad_option("needs libsnn_dist, which this build lacks (it is built when MPI is found)",
                       arg, NULL);
#endif
            o.distributed = 1;
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
        if (!strcmp(name, "--model")) {
            if (strcmp(value, "default") && strcmp(value, "simplenns") && strcmp(value, "resnet"))
                example_bad_option("expects default, simplenns or resnet", name, value);
            o.model = value;
        } else if (!strcmp(name, "--spec")) {
            o.spec = value;
        } else if (!strcmp(name, "--epochs")) {
            o.epochs = example_parse_long(name, value, 1, 1000);
        } else if (!strcmp(name, "--batch")) {
            o.batch = example_parse_long(name, value, 1, 60000);
        } else if (!strcmp(name, "--lr")) {
            char *end = NULL;
            o.lr = strtod(value, &end);
            if (end == value || *end || !(o.lr > 0.0 && o.lr < 10.0))
                example_bad_option("expects a number in (0, 10)", name, value);
        } else if (!strcmp(name, "--weight-decay")) {
            char *end = NULL;
            o.weight_decay = strtod(value, &end);
            if (end == value || *end || !(o.weight_decay >= 0.0 && o.weight_decay < 1.0))
                example_bad_option("expects a number in [0, 1)", name, value);
        } else if (!strcmp(name, "--seed")) {
            o.seed = (unsigned long long)example_parse_long(name, value, 0, 2147483647L);
        } else if (!strcmp(name, "--data")) {
            o.data_dir = value;
        } else if (!strcmp(name, "--threads")) {
            o.threads = example_parse_long(name, value, 1, 1024);
        } else if (!strcmp(name, "--out")) {
            o.out_dir = value;
        } else if (!strcmp(name, "--limit")) {
            o.limit = example_parse_long(name, value, 5, 60000);
        } else if (!strcmp(name, "--load")) {
            o.load = value;
        } else if (!strcmp(name, "--start")) {
            o.start = value;
        } else if (!strcmp(name, "--export-onnx")) {
            o.export_onnx = value;
        } else if (!strcmp(name, "--device")) {
            if (strcmp(value, "cpu") && strcmp(value, "gpu") && strcmp(value, "auto"))
                example_bad_option("expects cpu, gpu or auto", name, value);
            o.device = value;
        } else if (!strcmp(name, "--precision")) {
            if (strcmp(value, "float32") && strcmp(value, "bf16") && strcmp(value, "fp16"))
                example_bad_option("expects float32, bf16 or fp16", name, value);
            o.precision = value;
        } else {
            example_bad_option("is not an option", name, NULL);
        }
    }
    const int resnet = !o.spec && !strcmp(o.model, "resnet");
    if (o.epochs == 0) o.epochs = (!o.spec && !strcmp(o.model, "simplenns")) ? 3 : resnet ? 15 : 6;
    if (o.lr == 0.0) o.lr = resnet ? 2e-3 : 1e-3;
    if (o.weight_decay < 0.0) o.weight_decay = resnet ? 0.05 : 0.0;
    if (resnet) o.cosine = 1;
    return o;
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

#define CHECK(call)                                                                    \
    do {                                                                               \
        snn_status status_ = (call);                                                   \
        if (status_ != SNN_OK) {                                                       \
            fprintf(stderr, "\nfashion_mnist: %s\n", snn_last_error());                \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static void join_path(char *dst, size_t size, const char *dir, const char *name) {
    if (snprintf(dst, size, "%s/%s", dir, name) >= (int)size) {
        fprintf(stderr, "fashion_mnist: path too long: %s/%s\n", dir, name);
        exit(1);
    }
}

/* dir/name.gz if it exists, else dir/name if that exists, else dir/name.gz
 * (whose reading then reports the missing file). */
static void data_file(char *dst, size_t size, const char *dir, const char *name) {
    char plain[4096];
    join_path(plain, sizeof plain, dir, name);
    if (snprintf(dst, size, "%s.gz", plain) >= (int)size) join_path(dst, size, dir, name);
    if (access(dst, R_OK) != 0 && access(plain, R_OK) == 0) snprintf(dst, size, "%s", plain);
}

static void load_split(const options *o, const char *prefix, idx_dataset *out) {
    char images[4096], labels[4096], name[64], error[512];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    data_file(images, sizeof images, o->data_dir, name);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    data_file(labels, sizeof labels, o->data_dir, name);
    idx_status status = idx_load_dataset(images, labels, IMAGE_SIDE, IMAGE_SIDE, CLASSES, out,
                                         error, sizeof error);
    if (status == IDX_OK) return;
    fprintf(stderr, "fashion_mnist: %s\n", error);
    if (status == IDX_ERR_OPEN)
        fprintf(stderr,
                "\nThe Fashion-MNIST data were not found in %s. Get them with\n"
                "    sudo apt-get install dataset-fashion-mnist\n"
                "or download train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,\n"
                "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz from\n"
                "https://github.com/zalandoresearch/fashion-mnist into a directory DIR\n"
                "and run with --data DIR.\n",
                o->data_dir);
    exit(1);
}

/* ------------------------------------------------------------------------ */
/* Evaluation                                                               */
/* ------------------------------------------------------------------------ */

/* Runs the model over the first n test images in batches of the cache's
 * maximum; confusion[true][predicted] counts the answers. Returns the
 * accuracy in [0, 1]. */
static double evaluate(const snn_model *model, snn_forward_cache *cache, const idx_dataset *test,
                       size_t n, long confusion[CLASSES][CLASSES]) {
    int64_t batch = 0, max_batch = 0;
    CHECK(snn_cache_batch(cache, &batch, &max_batch));
    memset(confusion, 0, sizeof(long) * CLASSES * CLASSES);
    long correct = 0;
    for (size_t start = 0; start < n; start += (size_t)max_batch) {
        size_t nb = n - start < (size_t)max_batch ? n - start : (size_t)max_batch;
        CHECK(snn_cache_set_batch(cache, (int64_t)nb));
        CHECK(snn_set_inputs(cache, test->images + start * PIXELS, nb * PIXELS));
        CHECK(snn_forward(cache, model));
        /* A copy works on every device (snn_outputs is the CPU's zero-copy view). */
        static float logits[EVAL_BATCH * CLASSES];
        CHECK(snn_get_outputs(cache, logits, nb * CLASSES));
        for (size_t i = 0; i < nb; ++i) {
            const float *y = logits + i * CLASSES;
            int best = 0;
            for (int c = 1; c < CLASSES; ++c)
                if (y[c] > y[best]) best = c;
            int truth = test->labels[start + i];
            confusion[truth][best] += 1;
            correct += best == truth;
        }
    }
    return (double)correct / (double)n;
}

/* ------------------------------------------------------------------------ */
/* Saving and loading parameters                                            */
/* ------------------------------------------------------------------------ */

/* fashion_mnist.params: one text line "snn-params 1 <count> <spec>", then
 * <count> little-endian float32 parameters in snn's flat layout. A model
 * with state (batchnorm's running statistics) is written as
 * "snn-params 2 <count> <state count> <spec>", the parameters, then the
 * state values. */
static void write_floats_le(FILE *f, const float *v, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        uint32_t bits;
        memcpy(&bits, &v[i], 4);
        unsigned char le[4] = {(unsigned char)bits, (unsigned char)(bits >> 8),
                               (unsigned char)(bits >> 16), (unsigned char)(bits >> 24)};
        fwrite(le, 1, 4, f);
    }
}

static void read_floats_le(FILE *f, const char *path, const char *what, float *v, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        unsigned char le[4];
        if (fread(le, 1, 4, f) != 4) {
            fprintf(stderr, "fashion_mnist: %s is truncated after %zu of %zu %s\n", path, i, count, what);
            exit(1);
        }
        uint32_t bits = (uint32_t)le[0] | (uint32_t)le[1] << 8 | (uint32_t)le[2] << 16 |
                        (uint32_t)le[3] << 24;
        memcpy(&v[i], &bits, 4);
    }
}

static void save_params(snn_model *model, const char *path) {
    size_t length = 0, count = 0;
    CHECK(snn_model_describe(model, NULL, 0, &length));
    char *spec = example_malloc(length + 1);
    CHECK(snn_model_describe(model, spec, length + 1, &length));
    /* A copy, not the zero-copy view: it works for a model on any device. */
    CHECK(snn_parameter_count(model, &count));
    float *params = example_malloc(count * sizeof(float));
    CHECK(snn_get_parameters(model, params, count));
    size_t state_count = 0;
    CHECK(snn_state_count(model, &state_count));
    float *state = example_malloc((state_count ? state_count : 1) * sizeof(float));
    CHECK(snn_get_state(model, state, state_count));

    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "fashion_mnist: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    if (state_count)
        fprintf(f, "%s %zu %zu %s\n", PARAMS_MAGIC_STATE, count, state_count, spec);
    else
        fprintf(f, "%s %zu %s\n", PARAMS_MAGIC, count, spec);
    write_floats_le(f, params, count);
    write_floats_le(f, state, state_count);
    if (ferror(f) | fclose(f)) {
        fprintf(stderr, "fashion_mnist: cannot write %s\n", path);
        exit(1);
    }
    free(state);
    free(params);
    free(spec);
}

/* Loads a model saved by this program: a fashion_mnist.params file, or a
 * model file (safetensors) written by snn_model_save. */
static snn_model *load_model(const char *path) {
    const size_t length = strlen(path);
    if (length > 5 && !strcmp(path + length - 5, ".onnx")) {
        snn_model *model = NULL;
        CHECK(snn_model_import_onnx(path, NULL, &model));
        char spec[4096];
        size_t spec_length = 0;
        CHECK(snn_model_describe(model, spec, sizeof spec, &spec_length));
        printf("imported    %s\nnetwork     %s\n", path, spec);
        return model;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fashion_mnist: cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    char line[8192];
    size_t count = 0, state_count = 0;
    int spec_at = 0;
    const int got_line = fgets(line, sizeof line, f) != NULL;
    const int v1 = got_line && !strncmp(line, PARAMS_MAGIC " ", strlen(PARAMS_MAGIC) + 1);
    const int v2 = got_line && !strncmp(line, PARAMS_MAGIC_STATE " ", strlen(PARAMS_MAGIC_STATE) + 1);
    if (!v1 && !v2) {
        fclose(f);
        snn_model *model = NULL;
        CHECK(snn_model_load(path, &model));
        return model;
    }
    const int parsed = v1 ? sscanf(line, PARAMS_MAGIC " %zu %n", &count, &spec_at)
                          : sscanf(line, PARAMS_MAGIC_STATE " %zu %zu %n", &count, &state_count, &spec_at);
    if (!strchr(line, '\n') || parsed != (v1 ? 1 : 2) || spec_at == 0) {
        fprintf(stderr, "fashion_mnist: %s: bad first line, expected \"" PARAMS_MAGIC
                        " COUNT SPEC\" or \"" PARAMS_MAGIC_STATE " COUNT STATE_COUNT SPEC\"\n",
                path);
        exit(1);
    }
    *strchr(line, '\n') = '\0';
    snn_model *model = NULL;
    CHECK(snn_model_create(line + spec_at, &model));
    size_t expected = 0, expected_state = 0;
    CHECK(snn_parameter_count(model, &expected));
    CHECK(snn_state_count(model, &expected_state));
    if (expected != count || expected_state != state_count) {
        fprintf(stderr,
                "fashion_mnist: %s: the header says %zu parameters and %zu state values, its spec "
                "has %zu and %zu\n",
                path, count, state_count, expected, expected_state);
        exit(1);
    }
    float *params = NULL;
    CHECK(snn_parameters(model, &params, &count));
    read_floats_le(f, path, "parameters", params, count);
    float *state = example_malloc((state_count ? state_count : 1) * sizeof(float));
    read_floats_le(f, path, "state values", state, state_count);
    CHECK(snn_set_state(model, state, state_count));
    free(state);
    fclose(f);
    return model;
}

/* ------------------------------------------------------------------------ */
/* Distributed training (--distributed)                                     */
/* ------------------------------------------------------------------------ */

/* The ranks this process trains with; without --distributed, rank 0 of 1
 * and every function below does nothing. Every rank shuffles with the same
 * seed, so all agree on each global batch; rank r takes the r-th of `size`
 * equal shares of it, the gradients of the shares are averaged (which is the
 * gradient of the whole batch), and every rank takes the same Adam step. */
typedef struct {
#ifdef SNN_HAVE_DIST
    snn_comm *comm;
#endif
    int32_t rank, size;
} cluster;

#ifdef SNN_HAVE_DIST
#define DIST_CHECK(call)                                                               \
    do {                                                                               \
        if ((call) != SNN_OK) {                                                        \
            fprintf(stderr, "\nfashion_mnist: %s\n", snn_dist_last_error());           \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)
#endif

static cluster join_cluster(const options *o) {
    cluster c;
    memset(&c, 0, sizeof c);
    c.size = 1;
#ifdef SNN_HAVE_DIST
    if (o->distributed) {
        DIST_CHECK(snn_comm_create_mpi(NULL, &c.comm));
        DIST_CHECK(snn_comm_rank(c.comm, &c.rank, &c.size));
        /* Only rank 0 reports (errors still reach stderr). */
        if (c.rank != 0 && !freopen("/dev/null", "w", stdout)) exit(1);
        /* The ranks are assumed to share one machine's cores; on a cluster,
         * pass --threads. */
        if (!o->threads && !getenv("SNN_NUM_THREADS")) {
            int32_t threads = snn_get_num_threads() / c.size;
            CHECK(snn_set_num_threads(threads > 0 ? threads : 1));
        }
        if (o->batch % c.size) {
            fprintf(stderr, "fashion_mnist: --batch %ld does not split evenly over %d ranks\n",
                    o->batch, (int)c.size);
            exit(2);
        }
    }
#else
    (void)o;
#endif
    return c;
}

/* All ranks start from rank 0's parameters. */
static void share_parameters(const cluster *c, snn_model *model) {
#ifdef SNN_HAVE_DIST
    if (c->comm) DIST_CHECK(snn_comm_broadcast_parameters(c->comm, model, 0));
#else
    (void)c, (void)model;
#endif
}

/* This rank's share [*first, *first + *count) of a global batch of n images
 * (n is a multiple of the ranks). */
static void batch_share(const cluster *c, size_t n, size_t *first, size_t *count) {
    *count = n / (size_t)c->size;
    *first = (size_t)c->rank * *count;
}

/* Replaces this rank's gradient with the mean over the ranks. */
static void average_gradients(const cluster *c, const snn_model *model, snn_backward_cache *bwd) {
#ifdef SNN_HAVE_DIST
    if (c->comm) DIST_CHECK(snn_comm_allreduce_gradients(c->comm, model, bwd));
#else
    (void)c, (void)model, (void)bwd;
#endif
}

/* The mean of a value over the ranks. */
static double average_over_ranks(const cluster *c, double value) {
#ifdef SNN_HAVE_DIST
    if (c->comm) {
        double sum[1] = {value};
        DIST_CHECK(snn_comm_allreduce_sum(c->comm, sum, 1));
        return sum[0] / (double)c->size;
    }
#else
    (void)c;
#endif
    return value;
}

static void leave_cluster(cluster *c) {
#ifdef SNN_HAVE_DIST
    snn_comm_destroy(c->comm);
    c->comm = NULL;
#else
    (void)c;
#endif
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */
/* ------------------------------------------------------------------------ */

static FILE *open_output(const char *dir, const char *name, char *path, size_t size) {
    join_path(path, size, dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "fashion_mnist: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

/* The model must read one 28x28 grey image and give ten class scores. */
static void check_model_shape(const snn_model *model) {
    size_t inputs = 0, outputs = 0;
    CHECK(snn_model_input_size(model, &inputs));
    CHECK(snn_model_output_size(model, &outputs));
    if (inputs != PIXELS || outputs != CLASSES) {
        fprintf(stderr,
                "fashion_mnist: the network takes %zu inputs and gives %zu outputs; "
                "Fashion-MNIST needs %d (28x28x1) and %d\n",
                inputs, outputs, PIXELS, CLASSES);
        exit(2);
    }
}

/* The snn_precision --precision names. */
static snn_precision precision_of(const options *o) {
    return !strcmp(o->precision, "bf16")   ? SNN_PRECISION_BF16
           : !strcmp(o->precision, "fp16") ? SNN_PRECISION_FP16
                                           : SNN_PRECISION_FLOAT32;
}

/* Moves the model where --device says; returns the device it is on. */
static int32_t move_to_device(const options *o, snn_model *model) {
    int32_t device = SNN_DEVICE_CPU;
    if (!o->device || !strcmp(o->device, "cpu")) return device;
    if (!strcmp(o->device, "auto")) {
        CHECK(snn_to_best_device(model, &device));
    } else if (snn_to_gpu(model, 0) != SNN_OK) {
        fprintf(stderr, "fashion_mnist: --device gpu: %s\n", snn_last_error());
        exit(1);
    } else {
        device = 0;
    }
    printf("device      %s\n", device == SNN_DEVICE_CPU ? "CPU" : "GPU 0");
    return device;
}

static int evaluate_saved(const options *o) {
    snn_model *model = load_model(o->load);
    check_model_shape(model);
    idx_dataset test = {0};
    load_split(o, "t10k", &test);
    size_t n = o->limit ? (size_t)o->limit / 5 : test.count;
    if (n > test.count) n = test.count;
    snn_forward_cache *eval = NULL;
    CHECK(snn_preallocate(model, n < EVAL_BATCH ? (int64_t)n : EVAL_BATCH, &eval));
    CHECK(snn_cache_set_training(eval, 0));
    CHECK(snn_cache_set_precision(eval, precision_of(o)));
    long confusion[CLASSES][CLASSES];
    double t0 = example_now_seconds();
    double accuracy = evaluate(model, eval, &test, n, confusion);
    double seconds = example_now_seconds() - t0;
    if (!o->quiet) example_print_confusion("class", class_names, CLASSES, 12, &confusion[0][0]);
    printf("test accuracy %.2f%% on %zu images (%.1f s, %.0f images/s)\n", 100.0 * accuracy, n,
           seconds, (double)n / seconds);
    if (o->export_onnx) {
        CHECK(snn_model_export_onnx(model, NULL, o->export_onnx));
        printf("wrote %s\n", o->export_onnx);
    }
    snn_forward_cache_destroy(eval);
    snn_model_destroy(model);
    idx_dataset_free(&test);
    return 0;
}

int main(int argc, char **argv) {
    example_set_program("fashion_mnist");
    options o = parse_options(argc, argv);
    if (o.threads) CHECK(snn_set_num_threads((int32_t)o.threads));
    if (o.load) return evaluate_saved(&o);
    cluster ranks = join_cluster(&o);

    const char *spec = o.spec                           ? o.spec
                       : !strcmp(o.model, "simplenns") ? simplenns_spec
                       : !strcmp(o.model, "resnet")    ? resnet_spec
                                                       : default_spec;
    snn_model *model = NULL;
    if (o.start) {
        model = load_model(o.start);
    } else if (snn_model_create(spec, &model) != SNN_OK) {
        fprintf(stderr, "fashion_mnist: bad --spec: %s\n", snn_last_error());
        return 2;
    }
    check_model_shape(model);
    if (!o.start) CHECK(snn_model_init(model, o.seed));
    share_parameters(&ranks, model);
    int32_t device = move_to_device(&o, model);
    size_t parameter_count = 0;
    CHECK(snn_parameter_count(model, &parameter_count));

    /* Open the outputs first, so that a bad --out fails before training.
     * Only rank 0 writes them. */
    char loss_path[4096], epochs_path[4096], params_path[4096], model_path[4096];
    FILE *loss_csv = open_output(ranks.rank ? "/dev" : o.out_dir,
                                 ranks.rank ? "null" : "fashion_mnist_loss.csv", loss_path,
                                 sizeof loss_path);
    FILE *epochs_csv = open_output(ranks.rank ? "/dev" : o.out_dir,
                                   ranks.rank ? "null" : "fashion_mnist_epochs.csv", epochs_path,
                                   sizeof epochs_path);
    join_path(params_path, sizeof params_path, o.out_dir, "fashion_mnist.params");
    join_path(model_path, sizeof model_path, o.out_dir, "fashion_mnist.safetensors");
    fprintf(loss_csv, "epoch,batch,loss\n");
    fprintf(epochs_csv, "epoch,train_loss,test_accuracy,train_seconds,images_per_second\n");

    idx_dataset train = {0}, test = {0};
    load_split(&o, "train", &train);
    load_split(&o, "t10k", &test);
    size_t n_train = train.count, n_test = test.count;
    if (o.limit) {
        if ((size_t)o.limit < n_train) n_train = (size_t)o.limit;
        if ((size_t)o.limit / 5 < n_test) n_test = (size_t)o.limit / 5;
    }
    n_train -= n_train % (size_t)ranks.size; /* every batch splits evenly */

    printf("network     %s\nparameters  %zu\ndata        %zu training and %zu test images "
           "from %s\ntraining    %ld epoch%s, batch %ld, %s lr %g%s, seed %llu, %d thread%s, %s\n\n",
           o.start ? o.start : spec, parameter_count, n_train, n_test, o.data_dir, o.epochs, o.epochs == 1 ? "" : "s",
           o.batch, o.weight_decay > 0.0 ? "AdamW" : "Adam", o.lr, o.cosine ? " (cosine schedule)" : "", o.seed, (int)snn_get_num_threads(), snn_get_num_threads() == 1 ? "" : "s", o.precision);
    if (ranks.size > 1)
        printf("ranks       %d MPI ranks, %ld images of each batch per rank, %d thread%s each\n\n",
               (int)ranks.size, o.batch / ranks.size, (int)snn_get_num_threads(),
               snn_get_num_threads() == 1 ? "" : "s");

    /* Everything the loop needs is allocated here, once. */
    snn_forward_cache *fwd = NULL, *eval = NULL;
    snn_backward_cache *bwd = NULL;
    snn_optimiser *adam = NULL;
    CHECK(snn_preallocate(model, o.batch / ranks.size, &fwd));
    CHECK(snn_preallocate_grads(model, o.batch / ranks.size, &bwd));
    CHECK(snn_preallocate(model, n_test < EVAL_BATCH ? (int64_t)n_test : EVAL_BATCH, &eval));
    /* Training passes use batch statistics and dropout; evaluation uses the
     * running statistics and no dropout, on its own cache. */
    CHECK(snn_cache_set_training(eval, 0));
    /* Products in the chosen precision; fp16 needs loss scaling. */
    snn_precision precision = precision_of(&o);
    CHECK(snn_cache_set_precision(fwd, precision));
    CHECK(snn_cache_set_precision(eval, precision));
    if (precision == SNN_PRECISION_FP16) CHECK(snn_set_loss_scaling(bwd, 1));
    /* Dropout's masks follow --seed (and differ between ranks). */
    CHECK(snn_cache_set_seed(fwd, o.seed + (unsigned long long)ranks.rank));
    CHECK(snn_optimiser_create(model, o.weight_decay > 0.0 ? SNN_OPTIMISER_ADAMW : SNN_OPTIMISER_ADAM, &adam));
    if (o.weight_decay > 0.0) CHECK(snn_optimiser_set(adam, SNN_HP_WEIGHT_DECAY, o.weight_decay));
    CHECK(snn_optimiser_set(adam, SNN_HP_LEARNING_RATE, o.lr));
    /* On a GPU the training set is uploaded once; batches are gathered there. */
    snn_dataset *gpu_train = NULL;
    if (device != SNN_DEVICE_CPU)
        CHECK(snn_dataset_create(device, train.images, train.count, PIXELS, train.labels, &gpu_train));
    int64_t *order = example_malloc(n_train * sizeof *order);
    for (size_t i = 0; i < n_train; ++i) order[i] = (int64_t)i;
    uint64_t rng = o.seed;

    example_progress bar = example_progress_start(o.quiet, LOG_EVERY, "images/s");
    size_t batches = (n_train + (size_t)o.batch - 1) / (size_t)o.batch;
    long confusion[CLASSES][CLASSES];
    double accuracy = 0.0, total_train_seconds = 0.0;
    for (long epoch = 1; epoch <= o.epochs; ++epoch) {
        if (o.cosine)
            CHECK(snn_optimiser_set(adam, SNN_HP_LEARNING_RATE,
                                    o.lr * 0.5 * (1.0 + cos(3.14159265358979323846 * (double)(epoch - 1) / (double)o.epochs))));
        example_shuffle(order, n_train, &rng);
        double epoch_loss = 0.0, window_loss = 0.0;
        size_t window = 0, seen = 0;
        double t0 = example_now_seconds();
        for (size_t b = 0; b < batches; ++b) {
            size_t start = b * (size_t)o.batch;
            size_t n = n_train - start < (size_t)o.batch ? n_train - start : (size_t)o.batch;
            /* The batch (this rank's share of it) is gathered by index from
             * the full data set. */
            size_t first = 0, mine = 0;
            batch_share(&ranks, n, &first, &mine);
            if (gpu_train) {
                CHECK(snn_set_inputs_from_dataset(fwd, gpu_train, order + start + first, mine));
                CHECK(snn_set_labels_from_dataset(bwd, gpu_train, order + start + first, mine));
            } else {
                CHECK(snn_set_inputs_gather(fwd, train.images, train.count, order + start + first, mine));
                CHECK(snn_set_labels_gather(bwd, train.labels, train.count, order + start + first, mine));
            }
            float loss = 0.0f;
            CHECK(snn_forward(fwd, model));
            CHECK(snn_backprop(bwd, fwd, model, SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
            average_gradients(&ranks, model, bwd);
            CHECK(snn_optimiser_step(adam, model, bwd));

            seen += n;
            epoch_loss += loss;
            window_loss += loss;
            if (++window == LOSS_WINDOW || b + 1 == batches) {
                fprintf(loss_csv, "%ld,%zu,%.6f\n", epoch, b + 1, window_loss / (double)window);
                window_loss = 0.0;
                window = 0;
            }
            example_progress_show(&bar, epoch, o.epochs, b + 1, batches, epoch_loss / (double)(b + 1),
                                  (double)seen, example_now_seconds() - t0);
        }
        double train_seconds = example_now_seconds() - t0;
        total_train_seconds += train_seconds;
        epoch_loss = average_over_ranks(&ranks, epoch_loss);

        double t1 = example_now_seconds();
        accuracy = evaluate(model, eval, &test, n_test, confusion);
        double eval_seconds = example_now_seconds() - t1;
        printf("epoch %ld/%ld  loss %.4f  test accuracy %.2f%%  train %.1f s (%.0f images/s)  "
               "test %.1f s\n",
               epoch, o.epochs, epoch_loss / (double)batches, 100.0 * accuracy, train_seconds,
               (double)seen / train_seconds, eval_seconds);
        fflush(stdout);
        fprintf(epochs_csv, "%ld,%.6f,%.6f,%.3f,%.1f\n", epoch, epoch_loss / (double)batches,
                accuracy, train_seconds, (double)seen / train_seconds);
        fflush(loss_csv);
        fflush(epochs_csv);
    }

    if (!o.quiet) example_print_confusion("class", class_names, CLASSES, 12, &confusion[0][0]);
    if (ranks.rank == 0) {
        CHECK(snn_model_save(model, model_path));
        save_params(model, params_path);
        if (o.export_onnx) CHECK(snn_model_export_onnx(model, NULL, o.export_onnx));
    }
    if (ferror(loss_csv) | fclose(loss_csv) | ferror(epochs_csv) | fclose(epochs_csv)) {
        fprintf(stderr, "fashion_mnist: cannot write %s or %s\n", loss_path, epochs_path);
        return 1;
    }
    printf("\nfinal test accuracy %.2f%% after %ld epoch%s, %.1f s of training\n"
           "wrote %s,\n      %s,\n      %s\n  and %s\n",
           100.0 * accuracy, o.epochs, o.epochs == 1 ? "" : "s", total_train_seconds, loss_path,
           epochs_path,
           params_path, model_path);
    if (o.export_onnx && ranks.rank == 0) printf("  and %s\n", o.export_onnx);

    free(order);
    snn_dataset_destroy(gpu_train);
    snn_optimiser_destroy(adam);
    snn_forward_cache_destroy(eval);
    snn_backward_cache_destroy(bwd);
    snn_forward_cache_destroy(fwd);
    snn_model_destroy(model);
    idx_dataset_free(&train);
    idx_dataset_free(&test);
    leave_cluster(&ranks);
    return 0;
}
