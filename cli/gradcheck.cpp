// `glass gradcheck`: the gradient check of every autograd op, for learners.
//
//   glass gradcheck            # every op
//   glass gradcheck --op NAME  # one op (NAME or NAME/<variant>, e.g. "matmul" or "matmul/batched")
//
// Each op runs on small random inputs in double precision; its backward pass (from the tape)
// is compared with central finite differences (autograd/gradcheck.hpp). One row per case:
// op, input shapes, max absolute error, max relative error, PASS/FAIL. Exit code 0 only when
// every row passes (1 otherwise, or for an unknown op name).

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "autograd/gradcheck_suite.hpp"
#include "cli/commands.hpp"

namespace {

void run_gradcheck(const std::string& only) {
  std::vector<glass::f64::OpCheckRow> rows;
  try {
    rows = glass::f64::run_gradcheck_suite(only);
  } catch (const std::invalid_argument& e) {
    throw glass::cli::CommandError(e.what());  // unknown --op: the message lists valid names
  }
  std::size_t failed = 0;
  std::size_t op_width = 22, shapes_width = 28;  // columns as wide as the longest entry
  for (const auto& row : rows) {
    op_width = std::max(op_width, row.op.size());
    shapes_width = std::max(shapes_width, row.shapes.size());
  }
  fmt::print("{:<{}} {:<{}} {:>12} {:>12}  {}\n", "op", op_width, "input shapes", shapes_width,
             "max abs err", "max rel err", "result");
  for (const auto& row : rows) {
    fmt::print("{:<{}} {:<{}} {:>12.3e} {:>12.3e}  {}\n", row.op, op_width, row.shapes,
               shapes_width, row.max_abs_error, row.max_rel_error, row.passed ? "PASS" : "FAIL");
    if (!row.passed) ++failed;
  }
  fmt::print(
      "\n{} of {} checks passed (double precision, central differences with eps 1e-6, "
      "pass when |analytic - numeric| <= 1e-6 + 1e-5 |numeric|)\n",
      rows.size() - failed, rows.size());
  std::fflush(stdout);
  if (failed > 0) throw CLI::RuntimeError(1);
}

}  // namespace

namespace glass::cli {

void add_gradcheck_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "gradcheck", "Check every op's backward pass against finite differences (double precision)");
  auto only = std::make_shared<std::string>();
  cmd->add_option("--op", *only,
                  "Check only this op (a name from the table, or its prefix before '/')");
  cmd->footer(
      "Examples:\n"
      "  glass gradcheck               every op\n"
      "  glass gradcheck --op softmax  one op");
  cmd->callback([only] { run_gradcheck(*only); });
}

}  // namespace glass::cli
