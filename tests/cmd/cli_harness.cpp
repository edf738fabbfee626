// RunZinf: fork/exec with pipes for stdin, stdout and stderr.
#include "tests/cmd/cli_harness.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

CliResult RunZinf(const std::vector<std::string>& args, const std::string& stdin_text,
                  const std::function<void()>& in_child) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    throw std::runtime_error("pipe failed");
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
      close(fd);
    }
    if (in_child) in_child();
    std::vector<char*> argv;
    std::string binary = ZINF_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copies = args;
    for (std::string& arg : copies) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (!stdin_text.empty()) {
    ssize_t written = write(in_pipe[1], stdin_text.data(), stdin_text.size());
    (void)written;
  }
  close(in_pipe[1]);
  CliResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    poll(fds, 2, -1);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buffer, n);
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

int InterruptZinfAfterLines(const std::vector<std::string>& args, const std::string& out,
                            size_t lines, int signal) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    std::vector<std::string> copy = args;
    std::vector<char*> argv = {const_cast<char*>(ZINF_BINARY)};
    for (std::string& arg : copy) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(ZINF_BINARY, argv.data());
    _exit(127);
  }
  for (int waited = 0; waited < 24000 && Lines(ReadFile(out)).size() < lines; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, signal);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

const std::string& ConvertedStories260KDir() {
  static const std::string dir = [] {
    const std::string out = MakeTempDir("cli-stories260K");
    const CliResult result =
        RunZinf({"convert", std::string(ZINF_SOURCE_DIR) + "/models/stories260K", out, "--force"});
    if (result.exit_code != 0) throw std::runtime_error("convert failed: " + result.err);
    return out;
  }();
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << content;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::string IdKey(const nlohmann::json& id) {
  return id.is_string() ? id.get<std::string>() : id.dump();
}

std::map<std::string, std::string> LinesById(const std::string& jsonl) {
  std::map<std::string, std::string> by_id;
  for (const std::string& line : Lines(jsonl)) {
    INFO(line);
    const nlohmann::json object = nlohmann::json::parse(line);
    REQUIRE(object.contains("id"));
    const bool inserted = by_id.emplace(IdKey(object["id"]), line).second;
    REQUIRE(inserted);  // each request exactly once
  }
  return by_id;
}

}  // namespace zinf::testing
