// `trainscope report`: the page is self-contained, embeds `simulate --json` verbatim, and (in
// headless Chromium) renders without script errors, showing the JSON's numbers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "cli_runner.h"

namespace trainscope {
namespace {

using ::testing::HasSubstr;

constexpr char kFlags[] =
    "--model Qwen3-0.6B --num-gpus 8 --tp 2 --pp 2 --sequence-parallel --gbs 16 --seq 2048 "
    "--gpu H100";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::filesystem::path TempDir() {
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "trainscope_report_XXXXXX").string();
  return mkdtemp(dir_template.data());
}

// The text of the <script> element with `id`.
std::string ScriptBlock(const std::string& page, const std::string& id) {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const size_t begin = page.find(open);
  if (begin == std::string::npos) return "";
  const size_t start = begin + open.size();
  return page.substr(start, page.find("</script>", start) - start);
}

struct Report {
  std::string page;
  nlohmann::json simulate;
  std::filesystem::path path;
};

Report WriteReport() {
  Report report;
  report.path = TempDir() / "report.html";
  const Outcome written = RunCli(std::string("report ") + kFlags + " -o " + report.path.string());
  EXPECT_EQ(written.exit_code, 0) << written.err;
  report.page = ReadFile(report.path);
  const Outcome simulate = RunCli(std::string("simulate ") + kFlags + " --json");
  EXPECT_EQ(simulate.exit_code, 0) << simulate.err;
  report.simulate = nlohmann::json::parse(simulate.out);
  return report;
}

TEST(ReportCliTest, WritesSelfContainedPageEmbeddingSimulateJson) {
  const Report report = WriteReport();
  EXPECT_THAT(report.page, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_EQ(nlohmann::json::parse(ScriptBlock(report.page, "simulate-json")), report.simulate);
  const nlohmann::json data = nlohmann::json::parse(ScriptBlock(report.page, "report-json"));
  EXPECT_EQ(data["timeline"]["lanes"].size(), 2u);
  EXPECT_EQ(data["memory"]["stages"].size(), 2u);
  EXPECT_TRUE(data["validation"]["ok"].get<bool>());
  EXPECT_FALSE(data["comm"].empty());
  // Nothing is fetched: no external scripts, styles, images or fonts.
  for (const char* fetch : {"src=", "href=", "<link", "@import", "url("}) {
    EXPECT_THAT(report.page, ::testing::Not(HasSubstr(fetch))) << fetch;
  }
  std::filesystem::remove_all(report.path.parent_path());
}

TEST(ReportCliTest, RejectsInvalidConfigurationWithoutWritingAFile) {
  const std::filesystem::path dir = TempDir();
  const Outcome outcome =
      RunCli("report --model Qwen3-8B --num-gpus 24 --tp 3 -o " + (dir / "report.html").string());
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("[C4]"));
  EXPECT_FALSE(std::filesystem::exists(dir / "report.html"));
  std::filesystem::remove_all(dir);
}

// The number the page shows under element `id` (its data-value attribute).
double ShownValue(const std::string& dom, const std::string& id) {
  const std::regex pattern("id=\"" + id + "\"[^>]*data-value=\"([^\"]*)\"");
  std::smatch match;
  EXPECT_TRUE(std::regex_search(dom, match, pattern)) << id;
  return match.empty() ? -1 : std::stod(match[1].str());
}

// Loads the page in headless Chromium (Debian's `chromium`) and reads the rendered DOM. Skipped
// only when Chromium is absent and TRAINSCOPE_BROWSER_TESTS is not 1 (CI sets it: .ci/run).
TEST(ReportCliTest, RendersInHeadlessChromiumWithTheSimulateNumbers) {
  const bool required = std::getenv("TRAINSCOPE_BROWSER_TESTS") != nullptr &&
                        std::string(std::getenv("TRAINSCOPE_BROWSER_TESTS")) == "1";
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) {
    ASSERT_FALSE(required) << "TRAINSCOPE_BROWSER_TESTS=1 but chromium is not installed";
    GTEST_SKIP() << "chromium is not installed (scripts/setup with TRAINSCOPE_BROWSER_TESTS=1)";
  }
  const Report report = WriteReport();
  const std::filesystem::path profile = report.path.parent_path() / "profile";
  const std::filesystem::path dom_path = report.path.parent_path() / "dom.html";
  const std::string command =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--no-first-run --user-data-dir=" +
      profile.string() + " --dump-dom file://" + report.path.string() + " >" + dom_path.string() +
      " 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string dom = ReadFile(dom_path);
  // The script ran to its end and wrote no error (the DOM is too long to print on failure).
  EXPECT_NE(dom.find("<body data-ok=\"1\">"), std::string::npos);
  EXPECT_NE(dom.find("<div id=\"error\"></div>"), std::string::npos);
  for (const char* key : {"step_time_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu"}) {
    EXPECT_EQ(ShownValue(dom, key), report.simulate[key].get<double>()) << key;
  }
  EXPECT_EQ(ShownValue(dom, "max_peak_bytes"),
            report.simulate["memory"]["max_peak_bytes"].get<double>());
  EXPECT_NE(dom.find("<rect"), std::string::npos);  // the SVG charts were drawn
  std::filesystem::remove_all(report.path.parent_path());
}

}  // namespace
}  // namespace trainscope
