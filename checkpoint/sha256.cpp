// SHA-256 through libcrypto's EVP digest interface (OpenSSL). See sha256.hpp.

#include "checkpoint/sha256.hpp"

#include <stdexcept>

#include <openssl/evp.h>

namespace glass {

struct Sha256::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

namespace {

void check(int ok, const char* step) {
  if (ok != 1) throw std::runtime_error(std::string("SHA-256: libcrypto's ") + step + " failed");
}

}  // namespace

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (context_->ctx == nullptr) throw std::runtime_error("SHA-256: no memory for a digest context");
  check(EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr), "EVP_DigestInit_ex");
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::string_view bytes) {
  check(EVP_DigestUpdate(context_->ctx, bytes.data(), bytes.size()), "EVP_DigestUpdate");
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  check(EVP_DigestFinal_ex(context_->ctx, digest, &size), "EVP_DigestFinal_ex");
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    text += kDigits[digest[i] >> 4];
    text += kDigits[digest[i] & 0xf];
  }
  return text;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex();
}

}  // namespace glass
