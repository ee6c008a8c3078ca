/* The data of examples/words: Debian's word lists of nine languages, read,
 * cleaned, split and encoded as token ids for snn's sequence models.
 *
 * Each list is a file of one word per line in /usr/share/dict (packages
 * wamerican, wfrench, ...). words_load reads all nine as UTF-8 (a line that
 * is not valid UTF-8 is read as ISO-8859-1: Debian's Swedish list is), and
 * keeps the words made of lowercase letters only: words with a capital
 * (proper nouns, and German nouns), an apostrophe, a hyphen, a digit or a
 * space are dropped, as are words longer than steps - 1 code points and
 * words that appear in more than one language. Each language's words are
 * split 90/10 into training and test words, by a fixed seed and stratified
 * by length, so words of every length are in both; then every language
 * keeps the same number of training words (and of test words): the
 * smallest language's count, capped by the options.
 *
 * Token ids: 0 is padding, 1..L the start token of each of the L
 * languages, L + 1 the end of a word, L + 2 a character never seen in
 * training, then one id per code point seen in the training words, in
 * code point order.
 */
#ifndef WORDLISTS_H
#define WORDLISTS_H

#include <stddef.h>
#include <stdint.h>

#define WORDS_LANGUAGES 9

typedef struct {
    const char *name;    /* "english" */
    const char *file;    /* its list in the dictionary directory */
    const char *package; /* the Debian package that installs it */
} words_language;

extern const words_language words_languages[WORDS_LANGUAGES];

/* The special token ids. */
#define WORDS_PAD 0
#define WORDS_START(language) (1 + (language))
#define WORDS_END (WORDS_LANGUAGES + 1)
#define WORDS_UNKNOWN (WORDS_LANGUAGES + 2)
#define WORDS_FIRST_CHAR (WORDS_LANGUAGES + 3)

/* Words of one split, language after language. */
typedef struct {
    size_t count;
    int32_t *language; /* [count] */
    int32_t *length;   /* [count] code points, in [1, steps - 1] */
    int32_t *chars;    /* [count][steps - 1] character ids, 0 after the word */
} word_split;

/* What reading one language kept and dropped. */
typedef struct {
    size_t lines, kept;
    /* The words dropped, each counted under the first of these it meets: */
    size_t capitals;   /* a capital letter (proper nouns, German nouns) */
    size_t other;      /* an apostrophe, hyphen, digit, space, ... */
    size_t too_long;   /* lowercase letters, but more than steps - 1 code points */
    size_t duplicates; /* the same word twice in the list */
    size_t ambiguous;  /* the word is in another language's list too */
    size_t train_available, test_available;
} words_counts;

typedef struct {
    int32_t steps;        /* T: the longest word, plus one for the start token */
    int32_t vocab;        /* V: the token ids */
    int32_t *code_points; /* [vocab]: each character id's code point, 0 for the special ids */
    word_split train, test;
    words_counts counts[WORDS_LANGUAGES];
    size_t unknown_chars; /* characters of test words never seen in training */
} word_data;

typedef struct {
    const char *dir;           /* where the lists are, /usr/share/dict */
    int32_t steps;             /* T, at least 2 */
    size_t train_per_language; /* at most this many training words per language */
    size_t test_per_language;  /* and test words */
} words_options;

typedef enum { WORDS_OK = 0, WORDS_ERR_OPEN, WORDS_ERR_READ, WORDS_ERR_MEMORY } words_status;

/* Reads and encodes the nine lists. On error, *error says what happened
 * (for WORDS_ERR_OPEN, the file and the package that installs it) and
 * nothing is left allocated. */
words_status words_load(const words_options *options, word_data *out, char *error,
                        size_t error_size);
void words_free(word_data *data);

/* Writes the encoded data to path, for other programs to train on the same
 * split (bench/words_torch.py reads it): a text header
 *     snn-words 1
 *     languages english french ...
 *     steps T
 *     vocab V
 *     code_points C0 C1 ... (V numbers)
 *     train N
 *     test M
 *     data
 * then little-endian int32 arrays: the training words' languages [N],
 * lengths [N] and characters [N][T-1], then the same for the test words. */
words_status words_export(const word_data *data, const char *path, char *error,
                          size_t error_size);

/* The inputs and labels of the two tasks for one split, one row per word:
 *   lang (language identification): tokens = the word's characters, then
 *     padding; length = its length; one label, the language.
 *   lm (language model): tokens = the language's start token, then the
 *     characters; length = 1 + the word's length; labels[t] = the token
 *     after step t: the next character, then the end token, then -1 on
 *     the padded steps. */
typedef enum { WORDS_TASK_LANG, WORDS_TASK_LM } words_task;

typedef struct {
    size_t count;
    int32_t steps;
    int32_t *tokens;  /* [count][steps] */
    int32_t *lengths; /* [count] */
    int32_t *labels;  /* [count] (lang) or [count][steps] (lm) */
    size_t labels_per_sample;
} words_batch_data;

words_status words_task_data(const word_data *data, const word_split *split, words_task task,
                             words_batch_data *out);
void words_task_data_free(words_batch_data *d);

/* Writes code point cp as UTF-8 into out (4 bytes at most); returns the
 * number of bytes. */
size_t words_utf8_encode(int32_t cp, char *out);

#endif
