#pragma once
// SHA-256 (FIPS 180-4), written out in full so that the checksum of a save can be read like the
// rest of the project: the manifest of each save (checkpoint/manifest.hpp) records one per file.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace glass {

/// SHA-256 of a byte stream fed in pieces: update() any number of times, then hex() once.
class Sha256 {
 public:
  Sha256();
  /// Adds `bytes` to the message.
  void update(std::string_view bytes);
  /// The digest of everything added, as 64 lowercase hexadecimal digits. Ends the message: call
  /// it once.
  std::string hex();

 private:
  void compress(const unsigned char* block);  // one 64-byte block into state_
  std::array<std::uint32_t, 8> state_;        // H0..H7
  std::array<unsigned char, 64> buffer_{};    // a block not yet full
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;  // message length in bytes
};

/// SHA-256 of `bytes`, as 64 lowercase hexadecimal digits, e.g. sha256_hex("abc") =
/// "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".
std::string sha256_hex(std::string_view bytes);

}  // namespace glass
