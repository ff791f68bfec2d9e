// Runs the built trainscope binary for end-to-end tests: exit code, stdout and stderr.
#ifndef TRAINSCOPE_TESTS_CLI_CLI_RUNNER_H_
#define TRAINSCOPE_TESTS_CLI_CLI_RUNNER_H_

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace trainscope {

struct Outcome {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs the built binary with `args` (shell-quoted by the caller where needed).
inline Outcome RunCli(const std::string& args) {
  // A fresh file per call: ctest runs CLI tests in parallel processes.
  std::string err_template =
      (std::filesystem::temp_directory_path() / "trainscope_cli_test_XXXXXX").string();
  const int err_fd = mkstemp(err_template.data());
  if (err_fd >= 0) close(err_fd);
  const std::filesystem::path err_path = err_template;
  const std::string command =
      std::string(TRAINSCOPE_BINARY) + " " + args + " 2>" + err_path.string();
  Outcome outcome;
  std::FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    outcome.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::ostringstream text;
  text << err.rdbuf();
  outcome.err = text.str();
  std::filesystem::remove(err_path);
  return outcome;
}

}  // namespace trainscope

#endif  // TRAINSCOPE_TESTS_CLI_CLI_RUNNER_H_
