// The embedded web pages (inspect/web_page.hpp): built from web/ with the
// stylesheet and scripts inline, and data put into their JSON tags safely.
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "inspect/web_page.hpp"

namespace glass {
namespace {

TEST(WebPage, PagesAreSelfContainedWithEmptyDataTags) {
  const std::string inspector = inspector_page(), loss = loss_page();
  for (const std::string& page : {inspector, loss}) {
    EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_EQ(page.find("<link"), std::string::npos) << "stylesheet inlined";
    EXPECT_EQ(page.find("<script src="), std::string::npos) << "scripts inlined";
    EXPECT_NE(page.find("<style>"), std::string::npos);
    EXPECT_NE(page.find("function lossChartSvg("), std::string::npos) << "the one loss renderer";
  }
  EXPECT_NE(inspector.find("id=\"glass-inspection\">{}</script>"), std::string::npos);
  EXPECT_NE(inspector.find("id=\"glass-view\">{}</script>"), std::string::npos);
  EXPECT_NE(loss.find("id=\"glass-loss\">{}</script>"), std::string::npos);
}

TEST(WebPage, WithJsonFillsTheTagAndEscapesWhatCouldEndIt) {
  const std::string page = "<p>x</p><script type=\"application/json\" id=\"d\">{}</script><p>y</p>";
  EXPECT_EQ(with_json(page, "d", R"({"a":"</script><b>&"})"),
            "<p>x</p><script type=\"application/json\" id=\"d\">"
            R"({"a":"\u003c/script\u003e\u003cb\u003e\u0026"})"
            "</script><p>y</p>");
  EXPECT_THROW(with_json(page, "other", "{}"), std::logic_error);
  EXPECT_THROW(with_json(with_json(page, "d", "[1]"), "d", "[2]"), std::logic_error)
      << "filled once";
}

}  // namespace
}  // namespace glass
