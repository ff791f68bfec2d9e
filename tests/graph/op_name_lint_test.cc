// Only graph/ knows op names: cost/, sim/ and report/ branch on op roles (graph/op.h) and may
// read an op's name only to print it. This lint reads their sources (TRAINSCOPE_SOURCE_DIR) with
// comments removed and fails on name matching: comparisons and searches on a `.name`, prefix
// helpers applied to a name, and string literals that look like op names or name suffixes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace trainscope::graph {
namespace {

// `source` with // and /* */ comments blanked out; string, character and raw string literals are
// kept (and their contents are never taken for comments). Line breaks are kept.
std::string StripComments(const std::string& source) {
  std::string out;
  size_t i = 0;
  while (i < source.size()) {
    const char c = source[i];
    if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
      while (i < source.size() && source[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '*') {
      const size_t end = source.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? source.size() : end + 2;
      for (; i < stop; ++i) out += source[i] == '\n' ? '\n' : ' ';
    } else if (c == 'R' && i + 1 < source.size() && source[i + 1] == '"') {
      const size_t open = source.find('(', i + 2);
      std::string close(1, ')');
      close.append(source, i + 2, open - (i + 2));
      close.push_back('"');
      const size_t end = source.find(close, open);
      const size_t stop = end == std::string::npos ? source.size() : end + close.size();
      out += source.substr(i, stop - i);
      i = stop;
    } else if (c == '"' || c == '\'') {
      out += source[i++];
      while (i < source.size() && source[i] != c) {
        if (source[i] == '\\' && i + 1 < source.size()) out += source[i++];
        out += source[i++];
      }
      if (i < source.size()) out += source[i++];
    } else {
      out += source[i++];
    }
  }
  return out;
}

// Receivers whose `.name` is not an op's: weight tensors (cost/memory.cc) and SimAI rows.
const std::set<std::string>& NonOpReceivers() {
  static const std::set<std::string> receivers = {"tensor", "row"};
  return receivers;
}

// The first component of op names (graph::FamilyName) and the suffixes graph/ composes names of.
constexpr const char* kOpNameLiteral =
    R"re("(input|embedding|attention|gdn|mlp|moe|lm_head|mtp|pp|dp|edp|tp|optimizer|fsdp)\.)re"
    R"re(|"[a-z_0-9.]*\.(bucket|grad|backward|dgrad|wgrad|ag_[a-z_]+|rs_[a-z_]+|ar_[a-z_]+)re"
    R"re(|a2a_[a-z_]+|shared_experts|flex|core|kernel|cp|p2p)\b)re";

// Every line of `source` (comments removed) that matches on an op name, as "line N: text".
std::vector<std::string> OpNameMatches(const std::string& source) {
  static const std::regex kMember(
      R"re((\w+)\s*(\[[^\]]*\])?\s*\.\s*name\s*(==|!=|\.\s*(starts_with|ends_with|find|rfind|substr|compare|contains)\s*\())re");
  static const std::regex kReversed(R"re((==|!=)\s*(\w+)\s*(\[[^\]]*\])?\s*\.\s*name\b)re");
  static const std::regex kHelper(
      R"re(\b(StartsWith|EndsWith|Contains|starts_with|ends_with)\s*\([^,;]*\bname\b)re");
  static const std::regex kLiteral(kOpNameLiteral);
  std::vector<std::string> matches;
  std::istringstream lines(StripComments(source));
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::smatch m;
    bool hit = std::regex_search(line, m, kMember) && !NonOpReceivers().contains(m[1].str());
    hit = hit || (std::regex_search(line, m, kReversed) && !NonOpReceivers().contains(m[2].str()));
    hit = hit || std::regex_search(line, kHelper) || std::regex_search(line, kLiteral);
    if (hit) matches.push_back("line " + std::to_string(number) + ": " + line);
  }
  return matches;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(OpNameLintTest, CostSimAndReportNeverMatchOnOpNames) {
  const std::filesystem::path root = TRAINSCOPE_SOURCE_DIR;
  int files = 0;
  for (const char* folder : {"cost", "sim", "report"}) {
    std::vector<std::filesystem::path> paths;
    for (const auto& entry : std::filesystem::directory_iterator(root / folder)) {
      const std::string ext = entry.path().extension().string();
      if (ext == ".cc" || ext == ".h") paths.push_back(entry.path());
    }
    std::sort(paths.begin(), paths.end());
    for (const std::filesystem::path& path : paths) {
      ++files;
      for (const std::string& match : OpNameMatches(ReadFile(path))) {
        ADD_FAILURE() << path.lexically_relative(root).string() << " " << match
                      << " (branch on op.role, graph/op.h)";
      }
    }
  }
  EXPECT_GT(files, 20);
}

// The checks catch the name matching that cost/, sim/ and report/ did before op roles (lines
// from commit cba90af).
TEST(OpNameLintTest, FlagsTheFormerNameMatching) {
  for (
      const char* line : {
          R"(  if (op.name == "attention.core") return KernelClass::kAttentionForward;)",
          R"(    if (op.name.starts_with("attention.core")) seconds *= scale;)",
          R"(  return StartsWith(op.name, "moe.dispatch") || StartsWith(op.name, "moe.combine");)",
          R"(      if (end < Size() && StartsWith(ops_[static_cast<size_t>(end)].name, x)) {)",
          R"(      const size_t at = op.name.find(".bucket");)",
          R"(std::string OpFamily(const Op& op) { return op.name.substr(0, op.name.find('.')); })",
          R"(  return name.starts_with("moe.dispatch.flex") || name.starts_with("moe.combine.flex");)",
          R"(  SetComm(in.fp, forward.TakeComm(c + ".ag_input"), kFpIg, context);)",
          R"(    SetComm(row.ig, backward.TakeComm(candidate.name + ".grad", group), kFpIg, ctx);)",
          R"(    if (used_[i] || !ops_[i].IsComm() || ops_[i].name != name) continue;)",
          R"(    {"dp.grad_reduce_scatter", "grad_reduce_scatter", SimAiColumnKind::kWeightGrad},)",
          R"(    {"fsdp.", "MegatronFSDP"},)",
          R"(    const Op* op = forward.TakeComm(std::string("lm_head.cross_entropy.ar_") + what);)",
          R"(  if (name == op.name) return true;)",
      }) {
    EXPECT_EQ(OpNameMatches(line).size(), 1u) << line;
  }
}

TEST(OpNameLintTest, AllowsPrintingNamesAndNonOpNames) {
  for (const char* line : {
           R"(  return name + op.name;)",
           R"(  TRAINSCOPE_CHECK(ok, "op cost must be finite and >= 0: " + op.name);)",
           R"(  out += fmt::format("{} {}", Quoted(op.name), op.group_size);)",
           R"(  DroppedComm& entry = dropped[op.name];)",
           R"(    if (tensor.name.find(name) != std::string::npos) return true;)",
           R"(    return row.name == name && row.fp.comm == token;)",
           R"(  SimAiRow in{.name = spec.row_prefix + "_in"};)",
           R"(  // Ops called "attention.core" were matched by name here.)",
           R"(  const char* url = "http://example.com/attention";)",
       }) {
    EXPECT_TRUE(OpNameMatches(line).empty()) << line;
  }
}

}  // namespace
}  // namespace trainscope::graph
