// UTF-8 decoding and corpus loading: accents, emoji, BOM, CRLF, invalid bytes, bad files.
// Expected code points and byte offsets are worked out by hand from the UTF-8 encoding table
// (RFC 3629): é = C3 A9 = U+00E9, ç = C3 A7 = U+00E7, ã = C3 A3 = U+00E3,
// 😀 = F0 9F 98 80 = U+1F600.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>
#include <vector>

#include "data/text.hpp"
#include "test_util.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using glass::load_text;
using glass::TextInfo;
using glass::utf8_to_u32;
using glass::Utf8Error;

namespace {

/// A fresh file in a per-test temporary directory holding exactly `bytes`.
std::string write_temp(const std::string& name, const std::string& bytes) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::temp_directory_path() / ("glass_text_test_" + std::string(info->name()) + "_" +
                                              std::to_string(::getpid()));
  fs::create_directories(dir);
  glass_test::remove_at_exit(dir);
  fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

/// Expects `f` to throw E and returns its message.
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

}  // namespace

TEST(Utf8, DecodesAccentsAndEmoji) {
  const std::string bytes = "a\xC3\xA9\xC3\xA7\xC3\xA3\xF0\x9F\x98\x80z";  // "aéçã😀z"
  const std::u32string text = utf8_to_u32(bytes);
  ASSERT_EQ(text.size(), 6u);
  EXPECT_EQ(text[0], U'a');
  EXPECT_EQ(static_cast<std::uint32_t>(text[1]), 0xE9u);
  EXPECT_EQ(static_cast<std::uint32_t>(text[2]), 0xE7u);
  EXPECT_EQ(static_cast<std::uint32_t>(text[3]), 0xE3u);
  EXPECT_EQ(static_cast<std::uint32_t>(text[4]), 0x1F600u);
  EXPECT_EQ(text[5], U'z');
  EXPECT_EQ(glass::u32_to_utf8(text), bytes);  // and back, byte for byte
}

TEST(Utf8, InvalidLeadByteReportsOffsetAndValue) {
  // "ab" then a lone continuation byte 0x80 at offset 2.
  Utf8Error err("", 0);
  try {
    utf8_to_u32(
        std::string("ab\x80"
                    "cd"));
    FAIL() << "expected Utf8Error";
  } catch (const Utf8Error& e) {
    err = e;
  }
  EXPECT_EQ(err.byte_offset(), 2u);
  EXPECT_NE(std::string(err.what()).find("byte offset 2"), std::string::npos) << err.what();
  EXPECT_NE(std::string(err.what()).find("0x80"), std::string::npos) << err.what();
}

TEST(Utf8, TruncatedAndOverlongSequences) {
  // "é" (2 bytes, offset 0..1) then the first two bytes of a 4-byte emoji, cut at the end:
  // the bad sequence starts at offset 2 with byte 0xF0.
  try {
    utf8_to_u32(std::string("\xC3\xA9\xF0\x9F"));
    FAIL();
  } catch (const Utf8Error& e) {
    EXPECT_EQ(e.byte_offset(), 2u);
    EXPECT_NE(std::string(e.what()).find("0xF0"), std::string::npos) << e.what();
  }
  // C0 AF is an overlong encoding of '/': invalid at offset 1.
  try {
    utf8_to_u32(std::string("x\xC0\xAF"));
    FAIL();
  } catch (const Utf8Error& e) {
    EXPECT_EQ(e.byte_offset(), 1u);
  }
  // ED A0 80 encodes the surrogate U+D800: invalid at offset 0.
  try {
    utf8_to_u32(std::string("\xED\xA0\x80"));
    FAIL();
  } catch (const Utf8Error& e) {
    EXPECT_EQ(e.byte_offset(), 0u);
  }
}

TEST(Utf8, DescribeChar) {
  EXPECT_EQ(glass::describe_char(U'\u00E9'), "'\xC3\xA9' (U+00E9)");
  EXPECT_EQ(glass::describe_char(U'\n'), "'\\n' (U+000A)");
  EXPECT_EQ(glass::describe_char(U'\U0001F600'), "'\xF0\x9F\x98\x80' (U+1F600)");
}

TEST(LoadText, DropsBomAndConvertsCrlf) {
  // BOM + "olá\r\nmundo\r\n" + a lone CR that must stay.
  const std::string path = write_temp("bom.txt", "\xEF\xBB\xBFol\xC3\xA1\r\nmundo\r\nx\ry");
  TextInfo info;
  const std::u32string text = load_text(path, &info);
  EXPECT_TRUE(info.had_bom);
  EXPECT_EQ(info.crlf_converted, 2u);
  EXPECT_EQ(info.bytes,
            19u);  // 3 (BOM) + 4 ("olá") + 2 (CRLF) + 5 ("mundo") + 2 (CRLF) + 3 ("x\ry")
  EXPECT_EQ(glass::u32_to_utf8(text), "ol\xC3\xA1\nmundo\nx\ry");
}

TEST(LoadText, PlainFileHasNoBom) {
  const std::string path = write_temp("plain.txt", "abc\n");
  TextInfo info;
  EXPECT_EQ(load_text(path, &info), U"abc\n");
  EXPECT_FALSE(info.had_bom);
  EXPECT_EQ(info.crlf_converted, 0u);
  EXPECT_EQ(info.bytes, 4u);
}

TEST(LoadText, InvalidUtf8NamesFileAndOffset) {
  // BOM (3 bytes) + "abc" + 0xFF: the bad byte is at file offset 6, counting the BOM.
  const std::string path = write_temp("bad.txt",
                                      "\xEF\xBB\xBF"
                                      "abc\xFF");
  try {
    load_text(path);
    FAIL();
  } catch (const Utf8Error& e) {
    EXPECT_EQ(e.byte_offset(), 6u);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("byte offset 6"), std::string::npos) << msg;
    EXPECT_NE(msg.find("0xFF"), std::string::npos) << msg;
  }
}

TEST(LoadText, BadFiles) {
  const std::string missing = (fs::temp_directory_path() / "glass_no_such_file_39d1.txt").string();
  EXPECT_NE(message_of<std::runtime_error>([&] { load_text(missing); }).find("No such file"),
            std::string::npos);

  const std::string empty = write_temp("empty.txt", "");
  EXPECT_NE(message_of<std::runtime_error>([&] { load_text(empty); }).find("empty"),
            std::string::npos);

  const std::string only_bom = write_temp("only_bom.txt", "\xEF\xBB\xBF");
  EXPECT_NE(message_of<std::runtime_error>([&] { load_text(only_bom); }).find("no text"),
            std::string::npos);

  const std::string binary = write_temp("binary.bin", std::string("PK\x03\x04\0\0ab", 8));
  EXPECT_NE(message_of<std::runtime_error>([&] { load_text(binary); }).find("looks binary"),
            std::string::npos);

  const std::string dir = fs::path(empty).parent_path().string();
  EXPECT_NE(message_of<std::runtime_error>([&] { load_text(dir); }).find("directory"),
            std::string::npos);
}

TEST(LoadText, BundledCorporaAreValidUtf8) {
  TextInfo info;
  const std::u32string pt =
      load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"), &info);
  EXPECT_EQ(info.bytes, 136169u);  // `wc -c data/corpora/domcasmurro.txt`
  EXPECT_EQ(pt.size(), 133196u);   // `wc -m` (code points) in a UTF-8 locale
  EXPECT_FALSE(info.had_bom);
  EXPECT_EQ(info.crlf_converted, 0u);
  const std::u32string en =
      load_text(glass_test::source_dir("/data/corpora/tinyshakespeare.txt"), &info);
  EXPECT_EQ(en.size(), 1115394u);  // ASCII: one character per byte
}

// load_text reads a file in chunks; a NUL byte or an invalid sequence past the first chunk (or
// one that straddles two) is still reported at its offset in the file. Offsets chosen around
// 64 KiB and 1 MiB, the sizes a chunk has had.
TEST(LoadText, ErrorOffsetsAcrossReadChunks) {
  for (const std::size_t at : {std::size_t{65535}, std::size_t{65536}, std::size_t{1048577}}) {
    std::string bytes(at + 10, 'a');
    bytes[at] = '\0';
    const std::string nul = write_temp("nul.txt", bytes);
    EXPECT_NE(message_of<std::runtime_error>([&] {
                load_text(nul);
              }).find("NUL byte at offset " + std::to_string(at)),
              std::string::npos)
        << at;
    bytes[at] = 'a';
    bytes[at - 1] = '\xC3';  // é cut in two by the chunk boundary, still valid: C3 A9
    bytes[at] = '\xA9';
    TextInfo info;
    const std::u32string text = load_text(write_temp("ok.txt", bytes), &info);
    EXPECT_EQ(text.size(), at + 9) << at;
    EXPECT_EQ(text[at - 1], U'\u00E9') << at;
    bytes[at] = 'x';  // C3 followed by 'x': invalid at offset at - 1
    try {
      load_text(write_temp("bad.txt", bytes));
      ADD_FAILURE() << "expected Utf8Error at " << at - 1;
    } catch (const Utf8Error& e) {
      EXPECT_EQ(e.byte_offset(), at - 1);
    }
  }
}

TEST(FirstNonblankChars, SkipsLeadingWhitespaceOfEveryKind) {
  using glass::first_nonblank_chars;
  const std::u32string blank = std::u32string(150, U' ') + std::u32string(50, U'\n');
  EXPECT_EQ(first_nonblank_chars(blank + U"Dom Casmurro", 3), U"Dom");
  EXPECT_EQ(first_nonblank_chars(U"\uFEFF\t\r\n\u00A0\u3000\u2003x y", 5), U"x y");
  EXPECT_EQ(first_nonblank_chars(U"ab", 32), U"ab");
  EXPECT_EQ(first_nonblank_chars(blank, 32), U"");
  EXPECT_TRUE(glass::is_blank_char(U'\v'));
  EXPECT_FALSE(glass::is_blank_char(U'a'));
  EXPECT_FALSE(glass::is_blank_char(U'\0'));
}
