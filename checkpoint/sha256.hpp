#pragma once
// SHA-256 (FIPS 180-4) of a save's files, computed by OpenSSL's libcrypto: the manifest of each
// save (checkpoint/manifest.hpp) records one per file.

#include <memory>
#include <string>
#include <string_view>

namespace glass {

/// SHA-256 of a byte stream fed in pieces: update() any number of times, then hex() once.
/// Throws std::runtime_error if libcrypto fails (out of memory).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  /// Adds `bytes` to the message.
  void update(std::string_view bytes);
  /// The digest of everything added, as 64 lowercase hexadecimal digits. Ends the message: call
  /// it once.
  std::string hex();

 private:
  struct Context;  // libcrypto's digest context
  std::unique_ptr<Context> context_;
};

/// SHA-256 of `bytes`, as 64 lowercase hexadecimal digits, e.g. sha256_hex("abc") =
/// "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".
std::string sha256_hex(std::string_view bytes);

}  // namespace glass
