// Simulate in a child process with a memory and a time budget (see simulate_child.h).
#include "scheduler/server/simulate_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <new>
#include <vector>

#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "scheduler/util/strings.h"

extern char** environ;

namespace tessel::server {
namespace {

constexpr std::string_view kChildFlag = "--simulate-child";
// The child's exit codes besides 0.
constexpr int kRefused = 3;     // the snapshot was refused: stdout says why
constexpr int kOutOfMemory = 4;

struct Pipe {
  int read = -1, write = -1;
  bool Open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
};

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

bool IsSimulateChild(int argc, char** argv) { return argc > 1 && argv[1] == kChildFlag; }

int SimulateChildMain(int argc, char** argv, const ReplayTextFn& replay) {
  std::string config;
  int64_t memory = 0, cpu = 0, max_nodes = 0, max_pods = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--config") config = value;
    if (flag == "--memory-bytes") memory = std::atoll(value);
    if (flag == "--cpu-seconds") cpu = std::atoll(value);
    if (flag == "--max-nodes") max_nodes = std::atoll(value);
    if (flag == "--max-pods") max_pods = std::atoll(value);
  }
  if (memory > 0) {
    const rlimit as{static_cast<rlim_t>(memory), static_cast<rlim_t>(memory)};
    ::setrlimit(RLIMIT_AS, &as);
  }
  if (cpu > 0) {
    const rlimit seconds{static_cast<rlim_t>(cpu), static_cast<rlim_t>(cpu + 1)};
    ::setrlimit(RLIMIT_CPU, &seconds);
  }
  try {
    const std::string snapshot{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    const nlohmann::json list = nlohmann::json::parse(snapshot, nullptr, false);
    int64_t nodes = 0, pods = 0;
    if (list.is_object() && list.contains("items") && list["items"].is_array()) {
      for (const nlohmann::json& item : list["items"]) {
        if (!item.is_object()) continue;
        const std::string kind = item.value("kind", "");
        nodes += kind == "Node";
        pods += kind == "Pod";
      }
    }
    if ((max_nodes > 0 && nodes > max_nodes) || (max_pods > 0 && pods > max_pods)) {
      std::cout << StrCat("the cluster is too large to simulate here: ", nodes, " nodes and ", pods,
                          " pods, at most ", max_nodes, " nodes and ", max_pods, " pods");
      return kRefused;
    }
    absl::StatusOr<std::string> result = replay(snapshot, config);
    if (!result.ok()) {
      std::cout << result.status().message();
      return kRefused;
    }
    std::cout << *result;
    std::cout.flush();
    return 0;
  } catch (const std::bad_alloc&) {
    return kOutOfMemory;
  }
}

absl::StatusOr<std::string> ReplayInChild(std::string_view snapshot, const ChildReplayOptions& options,
                                          const CallControl& control) {
  // A child that dies early makes the write fail with EPIPE; the signal stays pending on this
  // thread instead of ending the process.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  Pipe in, out;
  if (!in.Open() || !out.Open()) return absl::InternalError("simulate: cannot create pipes");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write, 1);
  const int64_t cpu_seconds = std::max<int64_t>(1, absl::ToInt64Seconds(options.timeout));
  std::vector<std::string> args = {options.executable,         std::string(kChildFlag),
                                   "--memory-bytes",           std::to_string(options.memory_bytes),
                                   "--cpu-seconds",            std::to_string(cpu_seconds),
                                   "--max-nodes",              std::to_string(options.max_nodes),
                                   "--max-pods",               std::to_string(options.max_pods)};
  if (!options.config_path.empty()) {
    args.push_back("--config");
    args.push_back(options.config_path);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, options.executable.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CloseFd(in.read);
  CloseFd(out.write);
  if (spawned != 0) {
    CloseFd(in.write);
    CloseFd(out.read);
    return absl::InternalError(StrCat("simulate: cannot start ", options.executable, ": errno ", spawned));
  }
  ::fcntl(in.write, F_SETFL, O_NONBLOCK);
  const absl::Time deadline = std::min(control.deadline, absl::Now() + options.timeout);
  std::string result;
  size_t written = 0;
  bool killed = false, too_big = false;
  char buf[65536];
  while (out.read >= 0) {
    if (absl::Now() >= deadline || (control.cancelled && control.cancelled()) ||
        result.size() > options.max_output_bytes) {
      too_big = result.size() > options.max_output_bytes;
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd fds[2] = {{out.read, POLLIN, 0}, {in.write, POLLOUT, 0}};
    const nfds_t n = in.write >= 0 ? 2 : 1;
    if (::poll(fds, n, 100) < 0 && errno != EINTR) break;
    if (n == 2 && fds[1].revents != 0) {
      const ssize_t w = ::write(in.write, snapshot.data() + written, snapshot.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = snapshot.size();  // the child is gone
      if (written == snapshot.size()) CloseFd(in.write);
    }
    if (fds[0].revents != 0) {
      const ssize_t r = ::read(out.read, buf, sizeof buf);
      if (r > 0) {
        result.append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        CloseFd(out.read);
      }
    }
  }
  CloseFd(in.write);
  CloseFd(out.read);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string budget = StrCat(options.memory_bytes >> 20, " MiB of memory and ",
                                    absl::FormatDuration(options.timeout));
  if (killed) {
    if (too_big) return absl::ResourceExhaustedError(StrCat("simulate: the result is larger than ", options.max_output_bytes, " bytes"));
    if (control.cancelled && control.cancelled()) return absl::CancelledError("simulate: the caller gave up");
    return absl::DeadlineExceededError(StrCat("simulate: the simulation did not end within its budget (", budget, ")"));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return result;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kRefused) return absl::InvalidArgumentError(result);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
    return absl::DeadlineExceededError(StrCat("simulate: the simulation used up its CPU budget (", budget, ")"));
  }
  if ((WIFEXITED(status) && WEXITSTATUS(status) == kOutOfMemory) || WIFSIGNALED(status)) {
    return absl::ResourceExhaustedError(StrCat("simulate: the simulation went past its budget (", budget,
                                               "); simulate a smaller cluster, or with tessel-bench replay"));
  }
  return absl::InternalError(StrCat("simulate: the simulation failed (exit status ", WEXITSTATUS(status), ")"));
}

}  // namespace tessel::server
