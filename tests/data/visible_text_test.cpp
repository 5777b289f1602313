// Control characters made visible (data/visible_text.hpp). The glyphs are Unicode's control
// pictures, U+2400 + c: NUL -> U+2400 "␀" (E2 90 80), ^D -> U+2404 "␄", ESC -> U+241B "␛",
// DEL -> U+2421 "␡"; C1 controls have no picture and are shown as "U+0085".

#include "data/visible_text.hpp"

#include <string>

#include <gtest/gtest.h>

#include "data/bpe_tokenizer.hpp"
#include "data/text_tokenizer.hpp"
#include "raw_control.hpp"

namespace {

using glass_test::has_raw_control;

TEST(VisibleText, ControlCharactersBecomeTheirPictures) {
  EXPECT_TRUE(glass::is_control_char(U'\0'));
  EXPECT_TRUE(glass::is_control_char(U'\x7F'));
  EXPECT_TRUE(glass::is_control_char(U'\u0085'));
  EXPECT_TRUE(glass::is_control_char(U'\u009F'));
  EXPECT_FALSE(glass::is_control_char(U' '));
  EXPECT_FALSE(glass::is_control_char(U'\u00A0'));
  EXPECT_EQ(glass::control_glyph(U'\0'), "\xE2\x90\x80");    // ␀
  EXPECT_EQ(glass::control_glyph(U'\x04'), "\xE2\x90\x84");  // ␄
  EXPECT_EQ(glass::control_glyph(U'\x1B'), "\xE2\x90\x9B");  // ␛
  EXPECT_EQ(glass::control_glyph(U'\x7F'), "\xE2\x90\xA1");  // ␡
  EXPECT_EQ(glass::control_glyph(U'\u009B'), "U+009B");      // CSI, C1
  EXPECT_EQ(glass::control_glyph(U'a'), "a");
}

TEST(VisibleText, EscapeControlsKeepsNewlinesTabsAndTextAndShowsTheRest) {
  // NUL, ^D, "ESC[2J" (clear the screen), CR, DEL, the C1 CSI U+009B (C2 9B), between words.
  const std::string text = std::string("a\0b\x04", 4) + "\x1B[2J\r\x7F" + "\xC2\x9B" + "é\n\tz";
  ASSERT_TRUE(has_raw_control(text));
  const std::string shown = glass::escape_controls(text);
  EXPECT_EQ(shown,
            "a\xE2\x90\x80"
            "b\xE2\x90\x84\xE2\x90\x9B[2J\xE2\x90\x8D\xE2\x90\xA1U+009B"
            "é\n\tz");
  EXPECT_FALSE(has_raw_control(shown));
  EXPECT_EQ(glass::escape_controls("plain text\n"), "plain text\n");
}

TEST(VisibleText, InvalidUtf8BecomesReplacementCharactersNeverRawBytes) {
  // A lone continuation byte, a truncated 3-byte sequence, an overlong ESC (C0 9B would be
  // U+001B spelled in two bytes): each byte U+FFFD, so no decoder after us sees an ESC.
  EXPECT_EQ(glass::escape_controls("\x80"), "\xEF\xBF\xBD");
  EXPECT_EQ(glass::escape_controls("\xE2\x90"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(glass::escape_controls("\xC0\x9B"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(glass::escape_controls("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(VisibleText, BpeByteTokensThatSpellEscapeSequencesAreShown) {
  // A BPE model spells ESC as the byte token <0x1B> (id 0x1B + 3), then '[', '2', 'J' as bytes
  // too, and a C1 control as its two UTF-8 bytes C2 9B: streamed, each becomes a piece whose
  // escaped text holds no control byte.
  const glass::TextTokenizer bpe(glass::BpeTokenizer::train(U"a a a", 259 + 2));
  constexpr std::int32_t kByte = glass::BpeTokenizer::kFirstByteId;
  glass::StreamDecoder stream(bpe);
  std::string raw, shown;
  for (std::int32_t id : {kByte + 0x1B, kByte + '[', kByte + '2', kByte + 'J', kByte + 0xC2,
                          kByte + 0x9B, kByte + 0x00, kByte + 0xC2}) {
    const std::string piece = stream.push(id);
    raw += piece;
    shown += glass::escape_controls(piece);
  }
  const std::string rest = stream.flush();  // the last C2 alone: U+FFFD
  raw += rest;
  shown += glass::escape_controls(rest);
  EXPECT_EQ(raw, std::string("\x1B[2J\xC2\x9B\0\xEF\xBF\xBD", 10));
  EXPECT_TRUE(has_raw_control(raw));
  EXPECT_EQ(shown, "\xE2\x90\x9B[2JU+009B\xE2\x90\x80\xEF\xBF\xBD");
  EXPECT_FALSE(has_raw_control(shown));
}

}  // namespace
