// snn_last_error() is UTF-8 even when a message quotes bytes from a spec or
// a file that are not: each byte that does not start a valid UTF-8 sequence
// is written as \xNN, and valid text (ASCII or not) is kept as it is. The
// check of validity is glibc's own decoder (iconv), not the library's.
#include <gtest/gtest.h>
#include <iconv.h>

#include <string>
#include <vector>

#include "snn.h"

namespace {

// Whether iconv decodes all of `text` as UTF-8.
bool is_utf8(const std::string &text) {
    iconv_t cd = iconv_open("UTF-32LE", "UTF-8");
    if (cd == iconv_t(-1)) return false;
    std::vector<char> in(text.begin(), text.end());
    std::vector<char> out(4 * text.size() + 4);
    char *src = in.data(), *dst = out.data();
    size_t src_left = in.size(), dst_left = out.size();
    const size_t done = iconv(cd, &src, &src_left, &dst, &dst_left);
    iconv_close(cd);
    return done != size_t(-1) && src_left == 0;
}

std::string error_of_spec(const std::string &spec) {
    snn_model *m = nullptr;
    EXPECT_EQ(snn_model_create(spec.c_str(), &m), SNN_ERR_SPEC) << spec;
    EXPECT_EQ(m, nullptr);
    return snn_last_error();
}

void keep_message(void *user, int32_t, const char *message) { *static_cast<std::string *>(user) = message; }

TEST(ErrorText, TheOracleRejectsWhatTheTestsFeed) {
    EXPECT_TRUE(is_utf8("rel\xc3\xbc \xe2\x82\xac \xf0\x9f\x98\x80"));
    EXPECT_FALSE(is_utf8("\xff\xfe"));
    EXPECT_FALSE(is_utf8("rel\xc0\xaf"));
    EXPECT_FALSE(is_utf8("x\xe2\x82"));
    EXPECT_FALSE(is_utf8("\xed\xa0\x80"));
    EXPECT_FALSE(is_utf8("\xf4\x90\x80\x80"));
}

TEST(ErrorText, InvalidBytesAreEscaped) {
    std::string logged;
    ASSERT_EQ(snn_set_log_callback(keep_message, &logged), SNN_OK);
    const std::string message = error_of_spec("input 4; dense 3 \xff\xfe");
    EXPECT_TRUE(is_utf8(message)) << message;
    EXPECT_NE(message.find("'\\xff\\xfe'"), std::string::npos) << message;
    EXPECT_EQ(logged, message);  // the log callback gets the same text
    ASSERT_EQ(snn_set_log_callback(nullptr, nullptr), SNN_OK);
}

TEST(ErrorText, OverlongTruncatedSurrogateAndTooLargeSequencesAreEscaped) {
    struct Case {
        const char *spec, *shown;
    };
    const Case cases[] = {
        {"input 4; dense 3 rel\xc0\xaf", "'rel\\xc0\\xaf'"},           // overlong '/'
        {"input 4; dense 3 x\xe2\x82", "'x\\xe2\\x82'"},                // truncated euro sign
        {"input 4; dense 3 \xe2\x82\xe2\x82\xac", "'\\xe2\\x82\xe2\x82\xac'"},  // cut, then whole
        {"input 4; dense 3 \xed\xa0\x80", "'\\xed\\xa0\\x80'"},         // UTF-16 surrogate
        {"input 4; dense 3 \xf4\x90\x80\x80", "'\\xf4\\x90\\x80\\x80'"},  // above U+10FFFF
        {"input 4; dense 3 \x80z", "'\\x80z'"},                         // lone continuation
    };
    for (const Case &c : cases) {
        const std::string message = error_of_spec(c.spec);
        EXPECT_TRUE(is_utf8(message)) << message;
        EXPECT_NE(message.find(c.shown), std::string::npos) << message << " lacks " << c.shown;
    }
}

TEST(ErrorText, ValidTextIsKept) {
    const std::string message = error_of_spec("input 4; dense 3 rel\xc3\xbc\xf0\x9f\x98\x80");
    EXPECT_TRUE(is_utf8(message)) << message;
    EXPECT_NE(message.find("'rel\xc3\xbc\xf0\x9f\x98\x80'"), std::string::npos) << message;
    EXPECT_EQ(message.find("\\x"), std::string::npos) << message;
}

}  // namespace
