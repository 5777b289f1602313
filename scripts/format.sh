#!/usr/bin/env bash
# Formats the C++ sources with clang-format and the project's .clang-format (Google style,
# 100 columns): the libraries, the glass program, the tests, the benchmarks and the tutorials.
# Usage: scripts/format.sh          rewrite the files in place
#        scripts/format.sh --check  change nothing; list the files clang-format would change and
#                                   exit 1 if there are any (CI runs this first)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=apply
case "${1:-}" in
  --check) mode=check ;;
  "") ;;
  -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "format: unknown argument '$1' (use --check or nothing)" >&2; exit 2 ;;
esac
command -v clang-format >/dev/null 2>&1 || bash scripts/install-deps.sh
# Every tracked C++ file except the fuzz seed corpora (data, not code).
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' | grep -v '^tests/fuzz/corpus/')
if [ "$mode" = apply ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "format: ${#bad[@]} file(s) are not formatted (run bash scripts/format.sh):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files formatted"
