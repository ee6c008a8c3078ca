/* Reading, cleaning, splitting and encoding the word lists (wordlists.h). */
#define _POSIX_C_SOURCE 200809L

#include "wordlists.h"

#include "example.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

const words_language words_languages[WORDS_LANGUAGES] = {
    {"english", "american-english", "wamerican"}, {"french", "french", "wfrench"},
    {"german", "ngerman", "wngerman"},            {"italian", "italian", "witalian"},
    {"spanish", "spanish", "wspanish"},           {"portuguese", "portuguese", "wportuguese"},
    {"dutch", "dutch", "wdutch"},                 {"swedish", "swedish", "wswedish"},
    {"polish", "polish", "wpolish"},
};

/* The split is the same whatever the training seed. */
#define SPLIT_SEED 20261125u
#define TEST_EVERY 10 /* one word in ten is a test word */
#define MAX_CODE_POINT 0x10FFFF

/* Fisher-Yates with the generator the training loop shuffles with. */
static void shuffle(uint32_t *v, size_t n, uint64_t *state) {
    for (size_t i = n; i > 1; --i) {
        size_t j = (size_t)example_random_below(state, i);
        uint32_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                    */
/* ------------------------------------------------------------------------ */

/* Decodes the n bytes of s into code points (at most max); returns their
 * count, or -1 if s is not valid UTF-8 (overlong forms, surrogates and code
 * points above U+10FFFF are invalid). */
static long utf8_decode(const unsigned char *s, size_t n, int32_t *cps, size_t max) {
    size_t count = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = s[i];
        int32_t cp;
        size_t extra;
        if (b < 0x80) cp = b, extra = 0;
        else if ((b & 0xE0) == 0xC0) cp = b & 0x1F, extra = 1;
        else if ((b & 0xF0) == 0xE0) cp = b & 0x0F, extra = 2;
        else if ((b & 0xF8) == 0xF0) cp = b & 0x07, extra = 3;
        else return -1;
        if (extra && i + extra >= n) return -1;
        for (size_t k = 1; k <= extra; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) return -1;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        static const int32_t least[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < least[extra] || cp > MAX_CODE_POINT || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
        if (count < max) cps[count] = cp;
        ++count;
        i += extra + 1;
    }
    return (long)count;
}

size_t words_utf8_encode(int32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ------------------------------------------------------------------------ */
/* Reading the lists                                                        */
/* ------------------------------------------------------------------------ */

/* Every kept word of every language, as UTF-8 in one pool. */
typedef struct {
    uint32_t offset;  /* into the pool */
    uint8_t bytes;    /* UTF-8 bytes */
    uint8_t length;   /* code points */
    uint8_t language;
} word_entry;

typedef struct {
    char *pool;
    size_t pool_size, pool_capacity;
    word_entry *entries;
    size_t count, capacity;
} word_pool;

static int pool_add(word_pool *p, const int32_t *cps, size_t length, int language) {
    char bytes[4 * 256];
    size_t n = 0;
    for (size_t i = 0; i < length; ++i) n += words_utf8_encode(cps[i], bytes + n);
    if (p->pool_size + n > p->pool_capacity) {
        size_t capacity = p->pool_capacity ? 2 * p->pool_capacity : 1 << 20;
        if (capacity > UINT32_MAX) return 0;
        char *grown = realloc(p->pool, capacity);
        if (!grown) return 0;
        p->pool = grown;
        p->pool_capacity = capacity;
    }
    if (p->count == p->capacity) {
        size_t capacity = p->capacity ? 2 * p->capacity : 1 << 16;
        word_entry *grown = realloc(p->entries, capacity * sizeof *grown);
        if (!grown) return 0;
        p->entries = grown;
        p->capacity = capacity;
    }
    memcpy(p->pool + p->pool_size, bytes, n);
    p->entries[p->count++] = (word_entry){(uint32_t)p->pool_size, (uint8_t)n, (uint8_t)length,
                                          (uint8_t)language};
    p->pool_size += n;
    return 1;
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *data = NULL;
    size_t used = 0, capacity = 0, got;
    do {
        if (used == capacity) {
            capacity = capacity ? 2 * capacity : 1 << 20;
            char *grown = realloc(data, capacity);
            if (!grown) {
                free(data);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            data = grown;
        }
        got = fread(data + used, 1, capacity - used, f);
        used += got;
    } while (got > 0);
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(data);
        errno = EIO;
        return NULL;
    }
    *size = used;
    return data;
}

/* Adds the words of one list that are lowercase letters only and short
 * enough to the pool. */
static words_status read_language(const char *dir, int language, int32_t max_length,
                                  word_pool *pool, words_counts *counts, char *error,
                                  size_t error_size) {
    const words_language *l = &words_languages[language];
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, l->file);
    size_t size = 0;
    char *text = read_file(path, &size);
    if (!text) {
        int open_failed = errno == ENOENT || errno == EACCES;
        snprintf(error, error_size, "cannot read %s: %s%s%s%s", path, strerror(errno),
                 open_failed ? " (the list of Debian's package " : "",
                 open_failed ? l->package : "", open_failed ? ")" : "");
        return open_failed ? WORDS_ERR_OPEN : WORDS_ERR_READ;
    }
    int32_t cps[256];
    for (size_t start = 0; start < size;) {
        size_t end = start;
        while (end < size && text[end] != '\n') ++end;
        size_t n = end - start;
        if (n && text[start + n - 1] == '\r') --n;
        const unsigned char *line = (const unsigned char *)text + start;
        start = end + 1;
        if (n == 0) continue;
        counts->lines += 1;
        long length = utf8_decode(line, n, cps, sizeof cps / sizeof *cps);
        if (length < 0) { /* ISO-8859-1: each byte is its code point */
            length = (long)n;
            for (size_t i = 0; i < n && i < sizeof cps / sizeof *cps; ++i) cps[i] = line[i];
        }
        int capital = 0, other = 0;
        for (long i = 0; i < length && i < (long)(sizeof cps / sizeof *cps); ++i) {
            if (iswupper((wint_t)cps[i])) capital = 1;
            else if (!iswalpha((wint_t)cps[i])) other = 1;
        }
        if (capital) {
            counts->capitals += 1;
            continue;
        }
        if (other) {
            counts->other += 1;
            continue;
        }
        if (length > max_length) {
            counts->too_long += 1;
            continue;
        }
        if (!pool_add(pool, cps, (size_t)length, language)) {
            free(text);
            snprintf(error, error_size, "out of memory reading %s", path);
            return WORDS_ERR_MEMORY;
        }
    }
    free(text);
    return WORDS_OK;
}

/* qsort has no context argument: the pool being sorted. */
static const char *sort_pool;

static int compare_words(const void *a, const void *b) {
    const word_entry *x = a, *y = b;
    size_t n = x->bytes < y->bytes ? x->bytes : y->bytes;
    int c = memcmp(sort_pool + x->offset, sort_pool + y->offset, n);
    if (c) return c;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
    return (int)x->language - (int)y->language;
}

/* Sorts the pool by word and keeps, in `keep`, the index of each word that
 * is in one language's list only (once); counts the rest. */
static size_t remove_ambiguous(word_pool *pool, uint32_t *keep, words_counts *counts) {
    sort_pool = pool->pool;
    qsort(pool->entries, pool->count, sizeof *pool->entries, compare_words);
    size_t kept = 0;
    for (size_t i = 0; i < pool->count;) {
        size_t j = i + 1;
        int languages = 1;
        while (j < pool->count && pool->entries[j].bytes == pool->entries[i].bytes &&
               !memcmp(pool->pool + pool->entries[j].offset, pool->pool + pool->entries[i].offset,
                       pool->entries[i].bytes)) {
            if (pool->entries[j].language != pool->entries[j - 1].language) languages += 1;
            else counts[pool->entries[j].language].duplicates += 1;
            ++j;
        }
        if (languages == 1) {
            keep[kept++] = (uint32_t)i;
            counts[pool->entries[i].language].kept += 1;
        } else {
            for (size_t k = i; k < j; ++k)
                if (k == i || pool->entries[k].language != pool->entries[k - 1].language)
                    counts[pool->entries[k].language].ambiguous += 1;
        }
        i = j;
    }
    return kept;
}

/* ------------------------------------------------------------------------ */
/* Splitting and encoding                                                   */
/* ------------------------------------------------------------------------ */

/* One language's words (indices into the pool), shuffled by the fixed seed,
 * then stably ordered by length; every TEST_EVERY-th is a test word. Both
 * parts are shuffled again, so that taking their first words takes words of
 * every length. */
static void split_language(const word_pool *pool, uint32_t *words, size_t n, uint32_t *scratch,
                           int language, size_t *train_count) {
    uint64_t rng = SPLIT_SEED + (uint64_t)language;
    shuffle(words, n, &rng);
    size_t at_length[257] = {0};
    for (size_t i = 0; i < n; ++i) at_length[pool->entries[words[i]].length + 1] += 1;
    for (int l = 1; l < 257; ++l) at_length[l] += at_length[l - 1];
    for (size_t i = 0; i < n; ++i) scratch[at_length[pool->entries[words[i]].length]++] = words[i];
    size_t train = 0, test = n - n / TEST_EVERY;
    for (size_t i = 0; i < n; ++i) {
        if (i % TEST_EVERY == TEST_EVERY - 1) words[test++] = scratch[i];
        else words[train++] = scratch[i];
    }
    shuffle(words, train, &rng);
    shuffle(words + train, n - train, &rng);
    *train_count = train;
}

static int allocate_split(word_split *s, size_t count, int32_t steps) {
    s->count = count;
    s->language = malloc((count ? count : 1) * sizeof *s->language);
    s->length = malloc((count ? count : 1) * sizeof *s->length);
    s->chars = calloc((count ? count : 1) * (size_t)(steps - 1), sizeof *s->chars);
    return s->language && s->length && s->chars;
}

static int32_t char_id(const word_data *d, int32_t cp) {
    int32_t lo = WORDS_FIRST_CHAR, hi = d->vocab - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (d->code_points[mid] == cp) return mid;
        if (d->code_points[mid] < cp) lo = mid + 1;
        else hi = mid - 1;
    }
    return WORDS_UNKNOWN;
}

static void encode_word(word_data *d, const word_pool *pool, uint32_t index, word_split *s,
                        size_t row) {
    const word_entry *e = &pool->entries[index];
    int32_t cps[256];
    long length = utf8_decode((const unsigned char *)pool->pool + e->offset, e->bytes, cps, 256);
    s->language[row] = e->language;
    s->length[row] = (int32_t)length;
    int32_t *chars = s->chars + row * (size_t)(d->steps - 1);
    for (long i = 0; i < length; ++i) {
        chars[i] = char_id(d, cps[i]);
        if (chars[i] == WORDS_UNKNOWN) d->unknown_chars += 1;
    }
}

void words_free(word_data *d) {
    free(d->code_points);
    word_split *splits[2] = {&d->train, &d->test};
    for (int i = 0; i < 2; ++i) {
        free(splits[i]->language);
        free(splits[i]->length);
        free(splits[i]->chars);
    }
    memset(d, 0, sizeof *d);
}

words_status words_load(const words_options *o, word_data *out, char *error, size_t error_size) {
    /* The classification of letters and capitals is the C library's, for
     * every code point; code points are decoded here, not by the locale. */
    if (!setlocale(LC_CTYPE, "C.UTF-8") && !setlocale(LC_CTYPE, "en_US.UTF-8")) {
        snprintf(error, error_size, "neither the C.UTF-8 nor the en_US.UTF-8 locale is available");
        return WORDS_ERR_READ;
    }
    word_data d;
    memset(&d, 0, sizeof d);
    d.steps = o->steps;
    word_pool pool;
    memset(&pool, 0, sizeof pool);
    words_status status = WORDS_OK;
    uint32_t *keep = NULL, *scratch = NULL;
    for (int l = 0; l < WORDS_LANGUAGES && status == WORDS_OK; ++l)
        status = read_language(o->dir, l, o->steps - 1, &pool, &d.counts[l], error, error_size);
    if (status != WORDS_OK) goto fail;

    status = WORDS_ERR_MEMORY;
    snprintf(error, error_size, "out of memory");
    keep = malloc((pool.count ? pool.count : 1) * sizeof *keep);
    scratch = malloc((pool.count ? pool.count : 1) * sizeof *scratch);
    if (!keep || !scratch) goto fail;
    size_t kept = remove_ambiguous(&pool, keep, d.counts);

    /* keep is in word order; gather each language's words and split them. */
    size_t first[WORDS_LANGUAGES + 1] = {0}, train_count[WORDS_LANGUAGES];
    for (int l = 0; l < WORDS_LANGUAGES; ++l) first[l + 1] = first[l] + d.counts[l].kept;
    size_t fill[WORDS_LANGUAGES];
    memcpy(fill, first, sizeof fill);
    for (size_t i = 0; i < kept; ++i) scratch[fill[pool.entries[keep[i]].language]++] = keep[i];
    memcpy(keep, scratch, kept * sizeof *keep);
    size_t train_per = o->train_per_language, test_per = o->test_per_language;
    for (int l = 0; l < WORDS_LANGUAGES; ++l) {
        size_t n = first[l + 1] - first[l];
        split_language(&pool, keep + first[l], n, scratch, l, &train_count[l]);
        d.counts[l].train_available = train_count[l];
        d.counts[l].test_available = n - train_count[l];
        if (train_count[l] < train_per) train_per = train_count[l];
        if (n - train_count[l] < test_per) test_per = n - train_count[l];
    }

    /* The vocabulary: every code point of the training words used. */
    unsigned char *seen = calloc(MAX_CODE_POINT + 1, 1);
    if (!seen) goto fail;
    int32_t chars = 0;
    for (int l = 0; l < WORDS_LANGUAGES; ++l)
        for (size_t i = 0; i < train_per; ++i) {
            const word_entry *e = &pool.entries[keep[first[l] + i]];
            int32_t cps[256];
            long length = utf8_decode((const unsigned char *)pool.pool + e->offset, e->bytes, cps, 256);
            for (long k = 0; k < length; ++k) chars += !seen[cps[k]], seen[cps[k]] = 1;
        }
    d.vocab = WORDS_FIRST_CHAR + chars;
    d.code_points = calloc((size_t)d.vocab, sizeof *d.code_points);
    if (!d.code_points) {
        free(seen);
        goto fail;
    }
    for (int32_t cp = 0, id = WORDS_FIRST_CHAR; cp <= MAX_CODE_POINT; ++cp)
        if (seen[cp]) d.code_points[id++] = cp;
    free(seen);

    if (!allocate_split(&d.train, train_per * WORDS_LANGUAGES, d.steps) ||
        !allocate_split(&d.test, test_per * WORDS_LANGUAGES, d.steps))
        goto fail;
    for (int l = 0; l < WORDS_LANGUAGES; ++l) {
        for (size_t i = 0; i < train_per; ++i)
            encode_word(&d, &pool, keep[first[l] + i], &d.train, (size_t)l * train_per + i);
        for (size_t i = 0; i < test_per; ++i)
            encode_word(&d, &pool, keep[first[l] + train_count[l] + i], &d.test,
                        (size_t)l * test_per + i);
    }
    status = WORDS_OK;
    error[0] = '\0';
    *out = d;
    d.code_points = NULL;
    memset(&d, 0, sizeof d);
fail:
    words_free(&d);
    free(keep);
    free(scratch);
    free(pool.pool);
    free(pool.entries);
    return status;
}

/* ------------------------------------------------------------------------ */
/* Export and the two tasks                                                 */
/* ------------------------------------------------------------------------ */

static int write_int32s(FILE *f, const int32_t *v, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        uint32_t u = (uint32_t)v[i];
        unsigned char le[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                               (unsigned char)(u >> 24)};
        if (fwrite(le, 1, 4, f) != 4) return 0;
    }
    return 1;
}

words_status words_export(const word_data *d, const char *path, char *error, size_t error_size) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(error, error_size, "cannot write %s: %s", path, strerror(errno));
        return WORDS_ERR_OPEN;
    }
    fprintf(f, "snn-words 1\nlanguages");
    for (int l = 0; l < WORDS_LANGUAGES; ++l) fprintf(f, " %s", words_languages[l].name);
    fprintf(f, "\nsteps %d\nvocab %d\ncode_points", (int)d->steps, (int)d->vocab);
    for (int32_t i = 0; i < d->vocab; ++i) fprintf(f, " %d", (int)d->code_points[i]);
    fprintf(f, "\ntrain %zu\ntest %zu\ndata\n", d->train.count, d->test.count);
    const word_split *splits[2] = {&d->train, &d->test};
    int ok = 1;
    for (int i = 0; i < 2; ++i) {
        ok = ok && write_int32s(f, splits[i]->language, splits[i]->count);
        ok = ok && write_int32s(f, splits[i]->length, splits[i]->count);
        ok = ok && write_int32s(f, splits[i]->chars, splits[i]->count * (size_t)(d->steps - 1));
    }
    int failed = !ok || ferror(f);
    failed |= fclose(f) != 0;
    if (failed) {
        snprintf(error, error_size, "cannot write %s", path);
        return WORDS_ERR_READ;
    }
    return WORDS_OK;
}

words_status words_task_data(const word_data *d, const word_split *s, words_task task,
                             words_batch_data *out) {
    const size_t T = (size_t)d->steps, n = s->count;
    words_batch_data b = {n, d->steps, NULL, NULL, NULL, task == WORDS_TASK_LM ? T : 1};
    b.tokens = calloc((n ? n : 1) * T, sizeof *b.tokens);
    b.lengths = malloc((n ? n : 1) * sizeof *b.lengths);
    b.labels = malloc((n ? n : 1) * b.labels_per_sample * sizeof *b.labels);
    if (!b.tokens || !b.lengths || !b.labels) {
        words_task_data_free(&b);
        return WORDS_ERR_MEMORY;
    }
    for (size_t i = 0; i < n; ++i) {
        const int32_t *chars = s->chars + i * (T - 1);
        int32_t *tokens = b.tokens + i * T, length = s->length[i];
        if (task == WORDS_TASK_LANG) {
            memcpy(tokens, chars, (size_t)length * sizeof *tokens);
            b.lengths[i] = length;
            b.labels[i] = s->language[i];
        } else {
            int32_t *labels = b.labels + i * T;
            tokens[0] = WORDS_START(s->language[i]);
            memcpy(tokens + 1, chars, (size_t)length * sizeof *tokens);
            b.lengths[i] = length + 1;
            for (size_t t = 0; t < T; ++t)
                labels[t] = (int32_t)t < length ? chars[t] : (int32_t)t == length ? WORDS_END : -1;
        }
    }
    *out = b;
    return WORDS_OK;
}

void words_task_data_free(words_batch_data *b) {
    free(b->tokens);
    free(b->lengths);
    free(b->labels);
    memset(b, 0, sizeof *b);
}
