// Fuzzes the reader of a save's interpretability record (serve/interp_lab.hpp,
// parse_interp_record): the input is the text of an interp.json. The reader must either throw
// std::runtime_error with a message or return a record of the format "glass-interp-1" whose
// every score table is n_layers rows of n_heads finite numbers, and that reads back to itself.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_util.hpp"
#include "serve/interp_lab.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json record;
  try {
    record = glass::serve_api::parse_interp_record(text);
  } catch (const std::runtime_error& e) {
    GLASS_FUZZ_CHECK(e.what()[0] != '\0');
    return 0;
  }
  GLASS_FUZZ_CHECK(record["format"] == glass::serve_api::kInterpRecordFormat);
  GLASS_FUZZ_CHECK(record["step"].is_number_integer() && record["step"].get<long long>() >= 0);
  const auto layers = record["n_layers"].get<long long>(),
             heads = record["n_heads"].get<long long>();
  GLASS_FUZZ_CHECK(layers >= 1 && heads >= 1);
  for (const char* kind : glass::serve_api::kInterpKinds) {
    const nlohmann::json& table = record[kind];
    GLASS_FUZZ_CHECK(table.is_array() && static_cast<long long>(table.size()) == layers);
    for (const nlohmann::json& row : table) {
      GLASS_FUZZ_CHECK(row.is_array() && static_cast<long long>(row.size()) == heads);
      for (const nlohmann::json& v : row)
        GLASS_FUZZ_CHECK(v.is_number() && std::isfinite(v.get<double>()));
    }
  }
  GLASS_FUZZ_CHECK(glass::serve_api::parse_interp_record(record.dump()) == record);
  return 0;
}
