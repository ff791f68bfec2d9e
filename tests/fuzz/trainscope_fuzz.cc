// A generator fuzzer for the trainscope command line and its input loaders (issue 11). From a
// fixed seed it builds mutated command lines (flags dropped, duplicated, values replaced by edge
// values), mutated input files (config.json, cluster YAML/JSON, calibration, histograms: truncated,
// deeply nested, huge numbers, wrong types, non-scalar YAML keys, invalid UTF-8) and awkward
// output paths, runs the built binary on each under `timeout`, and fails when a case
//   - exits with a code other than 0, 1 or 2 (a crash, an abort, a timeout),
//   - prints an internal-check failure, an uncaught exception or a sanitizer report,
//   - exits 2 with an error of more than 3 lines on stderr,
//   - leaves a partial file ("*.tmp.*") behind, or replaces /dev/null.
// Usage: trainscope_fuzz --binary PATH --data DIR [--cases N] [--seed S] [--jobs J]
//                        [--seconds T] [--work DIR] [--timeout S] [--memory-mb M] [--keep]
// --seconds stops starting new cases after T seconds; --keep keeps every case directory.
// Deterministic for a given seed: the same cases in the same order. Exit 0 when no case failed.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Options {
  std::string binary;
  std::string data;
  int64_t cases = 400;
  uint64_t seed = 1;
  int jobs = 2;
  double seconds = 0;  // 0 = no time budget
  std::string work = (fs::temp_directory_path() / "trainscope_fuzz").string();
  bool keep = false;
  int timeout_seconds = 20;
  // Address-space limit of each case in MiB (0 = none): a runaway allocation then fails inside
  // the case instead of pushing the machine into the OOM killer. Sanitizer builds need 0 (they
  // reserve terabytes of shadow memory) and use ASAN_OPTIONS=hard_rss_limit_mb instead.
  int64_t memory_mb = 4096;
  // Count hangs of cases with a global batch of a million samples or more as failures too. By
  // default they are listed as KNOWN: step cost still grows linearly with micro-batches per rank
  // (issue 11, "Simulation cost must not grow with the micro-batch count").
  bool strict = false;
};

// One generated case: the arguments after the binary and the files it needs in its directory.
struct Case {
  int64_t index = 0;
  std::vector<std::string> args;
  std::map<std::string, std::string> files;  // name in the case directory -> content
  std::string what;                          // a short description of the mutation
};

const std::vector<std::string> kEdgeValues = {"0",
                                              "-1",
                                              "1",
                                              "2",
                                              "1e400",
                                              "-1e400",
                                              "2147483648",
                                              "2147483647",
                                              "9223372036854775808",
                                              "",
                                              "nan",
                                              "inf",
                                              "-0",
                                              "1e-320",
                                              "0x10",
                                              "1.5",
                                              "10000000",
                                              "10000001",
                                              "100000000",
                                              "1e308",
                                              "4.9e-324",
                                              "\xff\xfe",
                                              "a\xc3",
                                              "--",
                                              "-",
                                              "@",
                                              "@/nonexistent",
                                              "1 2",
                                              "18446744073709551616"};

const std::vector<std::string> kValueFlags = {"--tp",
                                              "--pp",
                                              "--cp",
                                              "--ep",
                                              "--etp",
                                              "--dp",
                                              "--vpp",
                                              "--mbs",
                                              "--gbs",
                                              "--seq",
                                              "--num-gpus",
                                              "--rank",
                                              "--gpus-per-node",
                                              "--nvlink-domain",
                                              "--scale-out-gbps",
                                              "--scale-out-latency-us",
                                              "--memory-cuda-context-gib",
                                              "--memory-nccl-mib-per-communicator",
                                              "--memory-fragmentation",
                                              "--moe-expert-capacity-factor",
                                              "--comm-memory-guard-us",
                                              "--overlap-interference",
                                              "--num-layers-per-virtual-pipeline-stage",
                                              "--decoder-first-pipeline-num-layers",
                                              "--decoder-last-pipeline-num-layers",
                                              "--recompute-num-layers",
                                              "--ddp-bucket-size",
                                              "--make-vocab-size-divisible-by",
                                              "--hierarchical-context-parallel-sizes",
                                              "--microbatch-group-size-per-virtual-pipeline-stage",
                                              "--num-layers",
                                              "--hidden-size",
                                              "--num-experts",
                                              "--moe-routing-skew",
                                              "--gpu",
                                              "--format",
                                              "--model",
                                              "--cp-comm-type",
                                              "--recompute-granularity",
                                              "--megatron-core",
                                              "--max-tokens-per-gpu",
                                              "--rollout-gpus",
                                              "--rollout-tp",
                                              "--rollout-ep",
                                              "--bucket-mib",
                                              "--rollout-batch-size",
                                              "--n-samples-per-prompt",
                                              "--rollout-max-response-len",
                                              "--rollout-mean-response-len",
                                              "--rollout-prompt-len",
                                              "--sglang-mem-fraction-static",
                                              "--kl-coef",
                                              "--comm-memory-guard",
                                              "--framework"};

const std::vector<std::string> kSwitches = {"--json",
                                            "--sequence-parallel",
                                            "--summary",
                                            "--use-distributed-optimizer",
                                            "--overlap-grad-reduce",
                                            "--moe-grouped-gemm",
                                            "--fp8-param-gather",
                                            "--tp-comm-overlap",
                                            "--help",
                                            "--use-megatron-fsdp",
                                            "--cpu-offloading",
                                            "--colocate",
                                            "--use-dynamic-batch-size",
                                            "--use-kl-loss",
                                            "--rl-async"};

// Valid invocations; "{DATA}" is replaced by the data directory.
const std::vector<std::vector<std::string>> kSeedCommands = {
    {"params", "--model", "Qwen3-8B"},
    {"params", "--model", "Qwen3-30B-A3B", "--num-gpus", "16", "--ep", "8", "--json"},
    {"memory", "--model", "Qwen3-8B", "--num-gpus", "8", "--tp", "2"},
    {"memory", "--model-config", "{DATA}/qwen3_tiny.json", "--num-gpus", "2", "--json"},
    {"simulate", "--model", "Qwen3-0.6B", "--num-gpus", "8", "--tp", "2", "--gbs", "16"},
    {"simulate", "--model-config", "{DATA}/qwen3_tiny.json", "--num-gpus", "4", "--calibration",
     "{DATA}/calibration.json", "--json"},
    {"simulate", "--model", "Qwen3-30B-A3B", "--num-gpus", "8", "--ep", "8", "--moe-routing-skew",
     "{DATA}/expert_histogram.csv"},
    {"simulate", "--model", "Qwen3-0.6B", "--num-gpus", "4", "--seq-length-distribution",
     "{DATA}/seq_lengths.csv", "--json"},
    {"validate", "--model", "Qwen3-8B", "--num-gpus", "16", "--tp", "4"},
    {"validate", "--model", "Qwen3-8B", "--tp", "3", "--num-gpus", "3"},
    {"groups", "--model", "Qwen3-8B", "--num-gpus", "64", "--tp", "8"},
    {"groups", "--model", "Qwen3-8B", "--num-gpus", "64", "--tp", "8", "--rank", "5", "--json"},
    {"workload", "--model", "Qwen3-0.6B", "--num-gpus", "8", "--format", "simai"},
    {"workload", "--model", "Qwen3-30B-A3B", "--num-gpus", "8", "--ep", "8", "--format", "aicb"},
    {"workload", "--model", "Qwen3-0.6B", "--num-gpus", "4", "--summary", "--json"},
    {"presets", "--json"},
    {"help", "simulate"},
    {"weight-sync", "--model", "Qwen3-30B-A3B", "--num-gpus", "8", "--ep", "8", "--rollout-gpus",
     "8", "--rollout-tp", "4", "--json"},
    {"rl",
     "--model",
     "Qwen3-0.6B",
     "--num-gpus",
     "4",
     "--tp",
     "2",
     "--gbs",
     "8",
     "--colocate",
     "--rollout-tp",
     "2",
     "--rollout-batch-size",
     "4",
     "--n-samples-per-prompt",
     "4",
     "--rollout-max-response-len",
     "1024",
     "--use-kl-loss",
     "--json"},
    {"simulate", "--framework", "slime", "--model", "Qwen3-0.6B", "--num-gpus", "4", "--tp", "2",
     "--gbs", "16", "--use-dynamic-batch-size", "--max-tokens-per-gpu", "2048",
     "--seq-length-distribution", "{DATA}/seq_lengths.csv", "--comm-memory-guard", "all"},
};

// The input files a case can mutate: seed file in the data directory, or generated text, and the
// flag that reads it.
struct FileSeed {
  std::string flag;
  std::string name;  // name in the case directory
  std::string text;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<FileSeed> LoadFileSeeds(const std::string& data) {
  return {
      {"--model-config", "config.json", ReadFile(data + "/qwen3_tiny.json")},
      {"--model-config", "config.json", ReadFile(data + "/truncated.json")},
      {"--calibration", "calibration.json", ReadFile(data + "/calibration.json")},
      {"--moe-routing-skew", "experts.csv", ReadFile(data + "/expert_histogram.csv")},
      {"--moe-routing-skew", "experts.json", "[10, 20, 30, 40]"},
      {"--seq-length-distribution", "lengths.csv", ReadFile(data + "/seq_lengths.csv")},
      {"--seq-length-distribution", "lengths.json", R"({"lengths": [50, 150], "counts": [3, 1]})"},
      {"--cluster", "cluster.yaml",
       "gpu: H100\ngpus_per_node: 8\nnvlink_domain: 8\nscale_out_gbps: 400\n"
       "scale_out_latency_us: 10\nhbm_tbps: 3.35\nlinks:\n  nvlink_bus_efficiency: 0.8\n"},
      {"--cluster", "cluster.json",
       R"({"gpu": "GB200", "gpus_per_node": 4, "nvlink_domain": 72, "nvls": true,)"
       R"( "bf16_tflops": 2500, "links": {"scale_out_latency_seconds": 1e-5}})"},
  };
}

class Generator {
 public:
  Generator(uint64_t seed, std::string data) : rng_(seed), data_(std::move(data)) {
    file_seeds_ = LoadFileSeeds(data_);
  }

  Case Next(int64_t index) {
    Case c{.index = index};
    c.args = SeedCommand();
    const int kind = Pick(10);
    if (kind < 4) {
      MutateArgs(c);
    } else if (kind < 8) {
      MutateFile(c);
    } else {
      MutateOutput(c);
    }
    if (Pick(4) == 0) MutateArgs(c);  // sometimes combine
    return c;
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  template <typename T>
  const T& Choose(const std::vector<T>& items) {
    return items[rng_() % items.size()];
  }

  std::vector<std::string> SeedCommand() {
    std::vector<std::string> args = Choose(kSeedCommands);
    for (std::string& arg : args) {
      if (arg.rfind("{DATA}", 0) == 0) arg = data_ + arg.substr(6);
    }
    return args;
  }

  std::string EdgeValue() {
    if (Pick(12) == 0) return std::string(10'000 + Pick(50'000), 'a' + Pick(26));
    return Choose(kEdgeValues);
  }

  // Drops, duplicates or rewrites flags and values, or adds a flag with an edge value.
  void MutateArgs(Case& c) {
    std::vector<std::string>& args = c.args;
    const int op = Pick(6);
    const size_t at = args.size() > 1 ? 1 + rng_() % (args.size() - 1) : 1;
    if (op == 0 && args.size() > 1) {
      c.what += " drop " + args[at];
      args.erase(args.begin() + static_cast<long>(at));
    } else if (op == 1 && args.size() > 1) {
      c.what += " duplicate " + args[at];
      args.insert(args.begin() + static_cast<long>(at), args[at]);
    } else if (op == 2 && args.size() > 1) {
      c.what += " replace " + args[at];
      args[at] = EdgeValue();
    } else if (op == 3) {
      const std::string flag = Choose(kValueFlags);
      c.what += " add " + flag;
      args.push_back(flag);
      args.push_back(EdgeValue());
    } else if (op == 4) {
      c.what += " switch";
      args.push_back(Choose(kSwitches));
    } else {
      const std::string flag = Choose(kValueFlags);
      c.what += " add= " + flag;
      args.push_back(flag + "=" + EdgeValue());
    }
  }

  std::string HugeNumber() {
    static const std::vector<std::string> numbers = {"1e400",
                                                     "-1e400",
                                                     "1e308",
                                                     "1e-320",
                                                     "4.9e-324",
                                                     "-1",
                                                     "0",
                                                     "2147483648",
                                                     "9223372036854775808",
                                                     "18446744073709551616",
                                                     "1e19",
                                                     "-0.0",
                                                     "1.7976931348623157e308",
                                                     "100000000",
                                                     "10000001",
                                                     "0.5",
                                                     "3"};
    return Choose(numbers);
  }

  std::string WrongValue() {
    static const std::vector<std::string> values = {"\"x\"", "[]",          "{}",     "null",
                                                    "true",  "\"\\u00ff\"", "[1, 2]", "{\"a\": 1}",
                                                    "\"\"",  "false"};
    return Choose(values);
  }

  // Replaces the number at a random digit run with `value`.
  static bool ReplaceNumber(std::string& text, size_t start, const std::string& value) {
    size_t begin = text.find_first_of("0123456789", start);
    if (begin == std::string::npos) return false;
    while (begin > 0 && (text[begin - 1] == '-' || text[begin - 1] == '.')) --begin;
    size_t end = begin;
    while (end < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
            text[end] == 'e' || text[end] == 'E' || text[end] == '-' || text[end] == '+')) {
      ++end;
    }
    text.replace(begin, end - begin, value);
    return true;
  }

  std::string MutateText(std::string text, std::string& what) {
    const size_t at = text.empty() ? 0 : rng_() % text.size();
    switch (Pick(10)) {
      case 0:
        what += " truncate";
        return text.substr(0, at);
      case 1: {
        const int depth = Pick(2) == 0 ? 10'000 + Pick(90'000) : 60 + Pick(10);
        what += " nest " + std::to_string(depth);
        const size_t colon = text.find(':', at);
        const std::string nest = std::string(static_cast<size_t>(depth), '[') + "1" +
                                 std::string(static_cast<size_t>(depth), ']');
        if (colon == std::string::npos) return nest;
        const size_t end = text.find_first_of(",}\n", colon);
        text.replace(colon + 1, end == std::string::npos ? 0 : end - colon - 1, " " + nest);
        return text;
      }
      case 2:
      case 3: {
        const std::string value = HugeNumber();
        what += " number " + value;
        if (!ReplaceNumber(text, at, value)) ReplaceNumber(text, 0, value);
        return text;
      }
      case 4: {
        const std::string value = WrongValue();
        what += " wrong type " + value;
        const size_t colon = text.find(':', at);
        if (colon == std::string::npos) return value;
        const size_t end = text.find_first_of(",}\n", colon);
        text.replace(colon + 1, end == std::string::npos ? 0 : end - colon - 1, " " + value);
        return text;
      }
      case 5:
        what += " yaml key";
        return Pick(2) == 0 ? "{[1, 2]: 8}\n" : text + "\n? [a, b]\n: 1\n";
      case 6:
        what += " utf8";
        text.insert(at, "\xff\xfe\xc3");
        return text;
      case 7: {
        what += " flip";
        if (!text.empty()) text[at] = static_cast<char>(rng_() & 0xff);
        return text;
      }
      case 8:
        what += " empty";
        return Pick(2) == 0 ? "" : "{}";
      default:
        what += " duplicate";
        return text + text;
    }
  }

  // Points a file flag at a mutated copy of one of the seed files.
  void MutateFile(Case& c) {
    const FileSeed& seed = Choose(file_seeds_);
    c.what += " file " + seed.flag;
    const std::string text = MutateText(seed.text, c.what);
    c.files[seed.name] = text;
    std::vector<std::string>& args = c.args;
    if (seed.flag == "--model-config") {
      args = {
          Choose(std::vector<std::string>{"params", "memory", "simulate", "validate", "workload"}),
          "--model-config", "{CASE}/" + seed.name};
      if (Pick(2) == 0) args.push_back("--json");
      return;
    }
    const std::vector<std::string> base =
        seed.flag == "--moe-routing-skew"
            ? std::vector<std::string>{"simulate", "--model", "Qwen3-30B-A3B", "--num-gpus", "8",
                                       "--ep",     "8"}
            : std::vector<std::string>{Pick(2) == 0 ? "simulate" : "memory", "--model",
                                       "Qwen3-0.6B", "--num-gpus", "8"};
    args = base;
    args.push_back(seed.flag);
    args.push_back("{CASE}/" + seed.name);
    if (Pick(2) == 0) args.push_back("--json");
  }

  // Sends the output to a directory, /dev/null, a missing directory, a symlink or a FIFO-free
  // regular path, sometimes with --trace.
  void MutateOutput(Case& c) {
    static const std::vector<std::string> paths = {
        "{CASE}",          "/dev/null", "{CASE}/missing/out.txt", "{CASE}/link", "{CASE}/out.txt",
        "{CASE}/dangling", ""};
    const std::string path = Choose(paths);
    c.what += " output " + path;
    c.files["{symlinks}"] = "";
    c.args.push_back(Pick(2) == 0 ? "-o" : "--output");
    c.args.push_back(path);
    if (Pick(3) == 0) {
      c.args = {"simulate", "--model", "Qwen3-0.6B", "--num-gpus", "4", "-o", path};
      c.args.push_back("--trace");
      c.args.push_back(Choose(paths));
    }
  }

  std::mt19937_64 rng_;
  std::string data_;
  std::vector<FileSeed> file_seeds_;
};

// A case being run: its child process, directory and stderr file.
struct Running {
  Case c;
  pid_t pid = -1;
  fs::path dir;
  std::chrono::steady_clock::time_point start;
};

std::string Escaped(const std::string& arg) {
  std::string out(1, '\'');
  for (const char ch : std::string_view(arg).substr(0, 200)) {
    if (ch == '\'') {
      out.append("'\\''");
    } else if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(ch));
      out.append(hex);
    } else {
      out.push_back(ch);
    }
  }
  if (arg.size() > 200) {
    out.append("...(").append(std::to_string(arg.size())).append(" bytes)");
  }
  out.push_back('\'');
  return out;
}

std::string CommandLine(const Case& c) {
  std::string line = "trainscope";
  for (const std::string& arg : c.args) line.append(" ").append(Escaped(arg));
  return line;
}

// Creates the case directory with its files and substitutes {CASE} in the arguments.
void Prepare(Case& c, const fs::path& dir) {
  fs::create_directories(dir);
  for (const auto& [name, text] : c.files) {
    if (name == "{symlinks}") {
      std::ofstream(dir / "target.txt") << "old";
      fs::create_symlink(dir / "target.txt", dir / "link");
      fs::create_symlink(dir / "nowhere.txt", dir / "dangling");
      continue;
    }
    std::ofstream(dir / name, std::ios::binary) << text;
  }
  for (std::string& arg : c.args) {
    const size_t at = arg.find("{CASE}");
    if (at != std::string::npos) arg.replace(at, 6, dir.string());
  }
}

pid_t Launch(const Options& options, const Case& c, const fs::path& dir) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  const int null_fd = ::open("/dev/null", O_RDWR);
  const int err_fd = ::open((dir / "stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(null_fd, 0);
  ::dup2(null_fd, 1);
  ::dup2(err_fd, 2);
  if (::chdir(dir.c_str()) != 0) ::_exit(126);
  if (options.memory_mb > 0) {
    const rlim_t bytes = static_cast<rlim_t>(options.memory_mb) << 20;
    const struct rlimit limit { bytes, bytes };
    ::setrlimit(RLIMIT_AS, &limit);
  }
  std::vector<std::string> argv = {"timeout", "-s", "KILL", std::to_string(options.timeout_seconds),
                                   options.binary};
  argv.insert(argv.end(), c.args.begin(), c.args.end());
  std::vector<char*> raw;
  for (std::string& arg : argv) raw.push_back(arg.data());
  raw.push_back(nullptr);
  ::execvp("timeout", raw.data());
  ::_exit(127);
}

// A case whose global batch is at least a million samples: millions of micro-batches per rank.
bool HasHugeGlobalBatch(const Case& c) {
  for (size_t i = 0; i < c.args.size(); ++i) {
    const std::string_view arg = c.args[i];
    std::string_view value;
    for (const std::string_view flag :
         {std::string_view("--gbs"), std::string_view("--global-batch-size")}) {
      if (arg == flag && i + 1 < c.args.size()) value = c.args[i + 1];
      if (arg.size() > flag.size() && arg.starts_with(flag) && arg[flag.size()] == '=') {
        value = arg.substr(flag.size() + 1);
      }
    }
    if (!value.empty() && std::strtod(std::string(value).c_str(), nullptr) >= 1e6) return true;
  }
  return false;
}

int CountLines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// The reason a finished case failed, or "" when it passed.
std::string Judge(int status, const fs::path& dir) {
  const std::string err = ReadFile((dir / "stderr.txt").string());
  if (!WIFEXITED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  const int code = WEXITSTATUS(status);
  if (code == 124 || code == 137) return "timed out";
  if (code != 0 && code != 1 && code != 2) return "exit code " + std::to_string(code);
  for (const char* marker : {"internal check failed", "internal error", "CHECK failed",
                             "runtime error:", "AddressSanitizer", "LeakSanitizer",
                             "UndefinedBehaviorSanitizer", "terminate called", "what():"}) {
    if (err.find(marker) != std::string::npos) return std::string("stderr has \"") + marker + "\"";
  }
  if (code == 2 && CountLines(err) > 3) {
    return "exit-2 error of " + std::to_string(CountLines(err)) + " lines";
  }
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    if (it->path().filename().string().find(".tmp.") != std::string::npos) {
      return "partial file left: " + it->path().string();
    }
  }
  struct stat info {};
  if (::stat("/dev/null", &info) != 0 || !S_ISCHR(info.st_mode)) return "/dev/null was replaced";
  return "";
}

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "trainscope_fuzz: " << flag << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (flag == "--binary") {
      options.binary = value();
    } else if (flag == "--data") {
      options.data = value();
    } else if (flag == "--cases") {
      options.cases = std::stoll(value());
    } else if (flag == "--seed") {
      options.seed = std::stoull(value());
    } else if (flag == "--jobs") {
      options.jobs = std::max(1, std::stoi(value()));
    } else if (flag == "--seconds") {
      options.seconds = std::stod(value());
    } else if (flag == "--work") {
      options.work = value();
    } else if (flag == "--timeout") {
      options.timeout_seconds = std::stoi(value());
    } else if (flag == "--memory-mb") {
      options.memory_mb = std::stoll(value());
    } else if (flag == "--strict") {
      options.strict = true;
    } else if (flag == "--keep") {
      options.keep = true;
    } else {
      std::cerr << "usage: trainscope_fuzz --binary PATH --data DIR [--cases N] [--seed S] "
                   "[--jobs J] [--seconds T] [--work DIR] [--timeout S] [--memory-mb M] [--strict] "
                   "[--keep]\n";
      std::exit(2);
    }
  }
  if (options.binary.empty() || options.data.empty()) {
    std::cerr << "trainscope_fuzz: --binary and --data are required\n";
    std::exit(2);
  }
  // Cases run in their own directories.
  options.binary = fs::absolute(options.binary).string();
  options.data = fs::absolute(options.data).string();
  options.work = fs::absolute(options.work).string();
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseOptions(argc, argv);
  const fs::path work = options.work;
  fs::remove_all(work);
  fs::create_directories(work);
  Generator generator(options.seed, options.data);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<Running> running;
  int64_t next = 0;
  int64_t finished = 0;
  int64_t failures = 0;
  int64_t known = 0;
  std::map<int, int64_t> exit_codes;
  while (true) {
    const bool budget_left = options.seconds <= 0 || elapsed() < options.seconds;
    while (budget_left && next < options.cases && static_cast<int>(running.size()) < options.jobs) {
      Running r{.c = generator.Next(next), .dir = work / ("case" + std::to_string(next))};
      ++next;
      Prepare(r.c, r.dir);
      r.pid = Launch(options, r.c, r.dir);
      r.start = std::chrono::steady_clock::now();
      running.push_back(std::move(r));
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) break;
    const auto it = std::find_if(running.begin(), running.end(),
                                 [&](const Running& r) { return r.pid == pid; });
    if (it == running.end()) continue;
    ++finished;
    if (WIFEXITED(status)) ++exit_codes[WEXITSTATUS(status)];
    const std::string reason = Judge(status, it->dir);
    const bool resource_limit = reason == "timed out" || reason == "killed by signal 9";
    if (!reason.empty() && resource_limit && !options.strict && HasHugeGlobalBatch(it->c)) {
      ++known;
      std::cout << "KNOWN case " << it->c.index << " (" << reason
                << ", cost linear in micro-batches per rank):" << it->c.what << "\n  "
                << CommandLine(it->c) << "\n";
      fs::remove_all(it->dir);
    } else if (!reason.empty()) {
      ++failures;
      std::cout << "FAIL case " << it->c.index << " (" << reason << "):" << it->c.what << "\n  "
                << CommandLine(it->c) << "\n  kept in " << it->dir.string() << "\n";
      std::string err = ReadFile((it->dir / "stderr.txt").string());
      if (err.size() > 600) err = err.substr(0, 600) + "...";
      std::cout << "  stderr: " << err << "\n";
    } else if (!options.keep) {
      fs::remove_all(it->dir);
    }
    running.erase(it);
  }
  std::cout << "trainscope_fuzz: seed " << options.seed << ", " << finished << " cases in "
            << static_cast<int>(elapsed()) << " s, " << failures << " failed, " << known
            << " known; exit codes:";
  for (const auto& [code, count] : exit_codes) std::cout << " " << code << "x" << count;
  std::cout << "\n";
  if (failures == 0 && !options.keep) fs::remove_all(work);
  return failures == 0 ? 0 : 1;
}
