// Fuzzes the reading of `glass serve`'s requests (serve/bounded_http.hpp): the input is
// the bytes a client sends; the first byte sets the size of the pieces they arrive in. The
// reader must give the same verdict fed piece by piece as fed whole (its chunked parse resumes
// where it stopped), never hold a body over the limit it accepts, never end a request past the
// bytes received, and refuse only with the statuses it documents. The body of a complete
// request then goes through the API's JSON parse, which refuses duplicate keys.

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_util.hpp"
#include "data/json_no_duplicates.hpp"
#include "serve/bounded_http.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  glass::RequestLimits limits;
  limits.max_head_bytes = 512;  // small limits, so that inputs reach them
  limits.max_body_bytes = 256;

  glass::PartialRequest whole;
  whole.bytes = bytes;
  const glass::RequestScan at_once = glass::examine_request(whole, limits);

  glass::PartialRequest pieces;
  glass::RequestScan scan;
  for (std::size_t at = 0; at < bytes.size() && scan.state == glass::RequestScan::State::Incomplete;
       at += piece) {
    pieces.bytes += bytes.substr(at, piece);
    scan = glass::examine_request(pieces, limits);
  }
  GLASS_FUZZ_CHECK(scan.state == at_once.state);
  if (scan.state == glass::RequestScan::State::Refused) {
    // A refusal may come sooner piece by piece (a limit passed before the rest arrived) but
    // not with another status unless the whole input reaches another fault first.
    const int s = scan.status;
    GLASS_FUZZ_CHECK(s == 400 || s == 413 || s == 431 || s == 501);
    GLASS_FUZZ_CHECK(!scan.message.empty());
  }
  if (scan.state == glass::RequestScan::State::Complete) {
    GLASS_FUZZ_CHECK(scan.end == at_once.end);
    GLASS_FUZZ_CHECK(scan.end <= pieces.bytes.size());
    GLASS_FUZZ_CHECK(pieces.bytes.substr(0, scan.end) == whole.bytes.substr(0, at_once.end));
    GLASS_FUZZ_CHECK(pieces.decoded <= limits.max_body_bytes);
    GLASS_FUZZ_CHECK(pieces.body_start > 0 && pieces.body_start <= scan.end);
    if (!pieces.chunked) {
      GLASS_FUZZ_CHECK(pieces.content_length <= limits.max_body_bytes);
      const std::string body = pieces.bytes.substr(pieces.body_start, pieces.content_length);
      try {
        glass::parse_json_no_duplicate_keys(body);
      } catch (const glass::DuplicateKeyError&) {
      } catch (const glass::JsonTooDeepError&) {  // refused as the server refuses it (400)
      } catch (const nlohmann::json::exception&) {}
    }
  }
  return 0;
}
