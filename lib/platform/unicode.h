// UTF-8 and UTF-16, for the Windows API's wide-character calls. Pure
// functions, built and tested on every platform.
#pragma once

#include <string>

namespace snn {
namespace platform {

// The UTF-16 text of UTF-8 `text`; false (and *out unchanged) when text is
// not valid UTF-8: a stray or missing continuation byte, an overlong
// encoding, a surrogate (U+D800..U+DFFF) or a code point past U+10FFFF.
bool utf8_to_utf16(const std::string &text, std::u16string *out);

// The UTF-8 text of UTF-16 `text`; an unpaired surrogate becomes U+FFFD.
std::string utf16_to_utf8(const std::u16string &text);

}  // namespace platform
}  // namespace snn
