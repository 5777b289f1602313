// Configure-time probe (CMakeLists.txt, GLASS_ARCH): GCC 12.2 with AVX-512 enabled builds the
// initializer list {0.5, 0.5, 0, 0} as four 0.5s (one vpbroadcastq of 0.5 for the whole 256-bit
// store) at -O2 and above. Exits 0 when the compiler got the four lists right, 1 otherwise.
#include <vector>

__attribute__((noinline)) double sum_after_first_two(const std::vector<double>& v) {
  double s = 0;
  for (std::size_t i = 2; i < v.size(); ++i) s += v[i];
  return s;
}

__attribute__((noinline)) int count_wrong() {
  int wrong = 0;
  wrong += sum_after_first_two({1, 0, 0, 0}) != 0;
  wrong += sum_after_first_two({0.5, 0.5, 0, 0}) != 0;
  wrong += sum_after_first_two({1.0 / 3, 1.0 / 3, 1.0 / 3, 0}) != 1.0 / 3;
  wrong += sum_after_first_two({0.25, 0.25, 0.25, 0.25}) != 0.5;
  return wrong;
}

int main() { return count_wrong() == 0 ? 0 : 1; }
