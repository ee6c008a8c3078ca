// UTF-8 and UTF-16 (see unicode.h).
#include "platform/unicode.h"

#include <stdint.h>

namespace snn {
namespace platform {

bool utf8_to_utf16(const std::string &text, std::u16string *out) {
    std::u16string result;
    result.reserve(text.size());
    const size_t n = text.size();
    for (size_t i = 0; i < n;) {
        const unsigned char lead = static_cast<unsigned char>(text[i]);
        // The sequence's length and the smallest code point it may carry.
        size_t length;
        uint32_t cp, least;
        if (lead < 0x80) {
            length = 1, cp = lead, least = 0;
        } else if ((lead & 0xE0) == 0xC0) {
            length = 2, cp = lead & 0x1Fu, least = 0x80;
        } else if ((lead & 0xF0) == 0xE0) {
            length = 3, cp = lead & 0x0Fu, least = 0x800;
        } else if ((lead & 0xF8) == 0xF0) {
            length = 4, cp = lead & 0x07u, least = 0x10000;
        } else {
            return false;  // a continuation byte without a lead, or 0xF8..0xFF
        }
        if (length > n - i) return false;
        for (size_t k = 1; k < length; ++k) {
            const unsigned char c = static_cast<unsigned char>(text[i + k]);
            if ((c & 0xC0) != 0x80) return false;
            cp = cp << 6 | (c & 0x3Fu);
        }
        if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            result.push_back(char16_t(0xD800 + (cp >> 10)));
            result.push_back(char16_t(0xDC00 + (cp & 0x3FF)));
        } else {
            result.push_back(char16_t(cp));
        }
        i += length;
    }
    *out = std::move(result);
    return true;
}

std::string utf16_to_utf8(const std::u16string &text) {
    std::string result;
    result.reserve(text.size());
    const size_t n = text.size();
    for (size_t i = 0; i < n; ++i) {
        uint32_t cp = text[i];
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 1 < n && text[i + 1] >= 0xDC00 && text[i + 1] <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (text[i + 1] - 0xDC00u);
            ++i;
        } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            cp = 0xFFFD;
        }
        if (cp < 0x80) {
            result.push_back(char(cp));
        } else if (cp < 0x800) {
            result.push_back(char(0xC0 | cp >> 6));
            result.push_back(char(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            result.push_back(char(0xE0 | cp >> 12));
            result.push_back(char(0x80 | (cp >> 6 & 0x3F)));
            result.push_back(char(0x80 | (cp & 0x3F)));
        } else {
            result.push_back(char(0xF0 | cp >> 18));
            result.push_back(char(0x80 | (cp >> 12 & 0x3F)));
            result.push_back(char(0x80 | (cp >> 6 & 0x3F)));
            result.push_back(char(0x80 | (cp & 0x3F)));
        }
    }
    return result;
}

}  // namespace platform
}  // namespace snn
