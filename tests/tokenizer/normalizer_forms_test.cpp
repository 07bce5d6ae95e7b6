// The piecewise Unicode forms (normalize() cuts the text where no form reaches across) give
// exactly what utf8proc gives for the whole text, on random mixes of the characters that
// compose, reorder or decompose: marks, Hangul jamo, kana voicing marks, singletons, astral
// composites, invalid bytes.
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "tokenizer/normalizers.h"
#include "tokenizer/utf8_util.h"

namespace tf::tokenizer {
namespace {

std::string whole_form(const std::string& s, int options) {
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    static_cast<utf8proc_ssize_t>(s.size()), &out,
                                    static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) return s;
  std::string r(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return r;
}

std::string random_text(std::mt19937& rng, bool allow_invalid) {
  static const uint32_t kPool[] = {
      'a',    'e',    'A',     'K',     ' ',     '.',     0xE9,    0xC5,    0x212A,  0x2126, 0x0300,
      0x0301, 0x0308, 0x0327,  0x0345,  0x0344,  0x0F73,  0x0F81,  0x05B0,  0x1100,  0x1161, 0x11A8,
      0xAC00, 0xAC01, 0xD7A3,  0x3131,  0x304B,  0x3099,  0x309A,  0x30AB,  0xFF76,  0xFF9E, 0x4E00,
      0x4F60, 0xF900, 0x2F800, 0x1D15E, 0x1D165, 0x1D16E, 0x1F600, 0x0915,  0x093C,  0x0958, 0x03B1,
      0x0313, 0x1F00, 0x0399,  0x1E9B,  0x0323,  0xFB01,  0x2460,  0x00BD,  0x0F00,  0x0CCB, 0x0CC6,
      0x0CD5, 0x0B47, 0x0B3E,  0x09C7,  0x09BE,  0x1B05,  0x1B35,  0x110A5, 0x110BA,
  };
  std::string s;
  const size_t n = 1 + rng() % 40;
  for (size_t i = 0; i < n; ++i) {
    if (allow_invalid && rng() % 50 == 0) {
      s.push_back(static_cast<char>(0x80 + rng() % 0x80));
      continue;
    }
    append_utf8(s, kPool[rng() % std::size(kPool)]);
  }
  return s;
}

TEST(NormalizerFormsTest, PiecewiseEqualsWhole) {
  using K = NormalizerStep::Kind;
  const std::pair<K, int> forms[] = {{K::kNfc, UTF8PROC_COMPOSE},
                                     {K::kNfd, UTF8PROC_DECOMPOSE},
                                     {K::kNfkc, UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
                                     {K::kNfkd, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT}};
  std::mt19937 rng(11);
  int bad = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = random_text(rng, i % 4 == 0);
    for (const auto& [kind, options] : forms) {
      NormalizerStep step;
      step.kind = kind;
      std::string got = normalize({step}, text), want = whole_form(text, options);
      if (got != want && ++bad <= 5) {
        ADD_FAILURE() << "form " << static_cast<int>(kind) << " of "
                      << nlohmann::json(utf8_lossy(text)).dump();
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// NFC copies more characters through untouched than the other forms (precomposed letters,
// compatibility characters, Hangul syllables): every character, alone and between the marks and
// jamo that compose with it or reorder around it, normalizes as utf8proc does over the whole.
TEST(NormalizerFormsTest, NfcOfEveryCharacterInContext) {
  NormalizerStep nfc;
  nfc.kind = NormalizerStep::Kind::kNfc;
  int bad = 0;
  auto check = [&](const std::string& text) {
    if (normalize({nfc}, text) != whole_form(text, UTF8PROC_COMPOSE) && ++bad <= 5) {
      ADD_FAILURE() << "NFC of " << nlohmann::json(utf8_lossy(text)).dump();
    }
  };
  for (uint32_t cp = 0x80; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    if (cp == 0x30000) cp = 0xE0000;  // planes 3-13 hold no character that composes
    std::string c;
    append_utf8(c, cp);
    check(c);
    check("e" + c + "\u0301\u0323" + c + "\u11A8" + c + "x");
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace tf::tokenizer
