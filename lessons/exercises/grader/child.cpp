// Running the learner's code in a child process (child.hpp).
#include "child.hpp"

#include <cxxabi.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <typeinfo>

#include "exercise.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define QKV_EXERCISE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QKV_EXERCISE_ASAN 1
#endif
#endif

namespace qkv::exercises {

namespace {

// --- the child's side ---------------------------------------------------------------------
// One frame on the result pipe: a kind byte, then texts. 'R' returned (the
// result), 'N' not written (the function), 'E' threw (type, message), 'M' out of memory (message).

std::string demangle(const char* name) {
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string text = status == 0 && readable != nullptr ? readable : name;
  std::free(readable);
  return text;
}

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string frame(char kind, const std::vector<std::string>& texts) {
  Writer w;
  for (const std::string& t : texts) w.text(t);
  return std::string(1, kind) + w.bytes();
}

[[noreturn]] void child(const std::function<std::string()>& body, const ChildLimits& limits, int result_fd,
                        int output_fd) {
  setpgid(0, 0);
  // A crash ends the child by its signal, as the kernel delivers it: no
  // sanitizer's handler, no core file.
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGPIPE}) signal(s, SIG_DFL);
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  const auto cpu = static_cast<rlim_t>(std::ceil(limits.seconds)) + 1;
  rlimit cpu_limit{cpu, cpu + 1};
  setrlimit(RLIMIT_CPU, &cpu_limit);
#ifndef QKV_EXERCISE_ASAN
  rlimit memory{limits.memory_bytes, limits.memory_bytes};
  setrlimit(RLIMIT_AS, &memory);
#endif
  dup2(output_fd, STDOUT_FILENO);
  dup2(output_fd, STDERR_FILENO);
  close(output_fd);
  std::string reply;
  try {
    reply = frame('R', {body()});
  } catch (const NotWrittenYet& e) {
    reply = frame('N', {e.function});
  } catch (const std::bad_alloc& e) {
    reply = frame('M', {e.what()});
  } catch (const std::exception& e) {
    const std::string what = e.what();
    reply = what.find("out of memory") != std::string::npos ? frame('M', {what})
                                                            : frame('E', {demangle(typeid(e).name()), what});
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    reply = frame('E', {type != nullptr ? demangle(type->name()) : "an unknown type", ""});
  }
  std::fflush(stdout);
  std::fflush(stderr);
  write_all(result_fd, reply);
  _exit(0);  // no atexit handlers, no static destructors: the parent owns those
}

// --- the parent's side --------------------------------------------------------------------

std::string signal_text(int s) {
  switch (s) {
    case SIGSEGV:
      return "SIGSEGV, a segmentation fault: a read or write outside the memory the program owns (an index past "
             "the end, a dangling pointer or reference?)";
    case SIGBUS:
      return "SIGBUS, a bus error: a read or write of memory that is not there";
    case SIGABRT:
      return "SIGABRT: abort() was called (std::terminate, a failed assert, or a noexcept function that threw)";
    case SIGFPE:
      return "SIGFPE: an integer division by zero";
    case SIGILL:
      return "SIGILL: an illegal instruction (a function that should return a value fell off its end?)";
    case SIGKILL:
      return "SIGKILL: killed from outside (by the system, out of memory?)";
    case SIGXCPU:
      return "SIGXCPU: past its CPU-time limit";
    default:
      return fmt::format("signal {} ({})", s, strsignal(s));
  }
}

// The bytes of a frame, decoded into the outcome; false if they are not a whole frame.
bool decode(const std::string& bytes, ChildOutcome& o) {
  if (bytes.empty()) return false;
  try {
    const std::string rest = bytes.substr(1);
    Reader r(rest);
    switch (bytes[0]) {
      case 'R':
        o.ending = Ending::returned;
        o.result = r.text();
        break;
      case 'N':
        o.ending = Ending::not_written;
        o.result = r.text();
        break;
      case 'M':
        o.ending = Ending::out_of_memory;
        o.result = r.text();
        break;
      case 'E':
        o.ending = Ending::threw;
        o.detail = r.text();
        o.result = r.text();
        break;
      default:
        return false;
    }
    return r.done();
  } catch (const std::exception&) {
    return false;
  }
}

// Reads what is there on a non-blocking fd into `into`; false at end of file.
bool drain(int fd, const std::function<void(const char*, size_t)>& into) {
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      into(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return true;  // EAGAIN: nothing more for now
  }
}

}  // namespace

ChildOutcome run_in_child(const std::function<std::string()>& body, const ChildLimits& limits) {
  std::fflush(stdout);
  std::fflush(stderr);
  int result[2], output[2];
  if (pipe(result) != 0) throw std::runtime_error(fmt::format("grader: pipe failed: {}", std::strerror(errno)));
  if (pipe(output) != 0) {
    close(result[0]);
    close(result[1]);
    throw std::runtime_error(fmt::format("grader: pipe failed: {}", std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("grader: fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    close(result[0]);
    close(output[0]);
    child(body, limits, result[1], output[1]);
  }
  setpgid(pid, pid);  // as the child does: whichever runs first
  close(result[1]);
  close(output[1]);
  for (int fd : {result[0], output[0]}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);

  ChildOutcome o;
  std::string reply;
  auto keep_output = [&](const char* data, size_t n) {
    o.printed_bytes += n;
    const size_t room = limits.shown_bytes > o.printed.size() ? limits.shown_bytes - o.printed.size() : 0;
    o.printed.append(data, std::min(room, n));
    if (n > room) {
      o.cut_bytes += n - room;
      for (size_t i = room; i < n; ++i) o.cut_lines += data[i] == '\n' ? 1 : 0;
    }
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.seconds);
  bool result_open = true, output_open = true, timed_out = false, flooded = false;
  int status = 0;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    // Short slices: a child that has ended is noticed even if something it
    // started still holds the pipes open, and one that closed its pipes is
    // still timed.
    pollfd fds[2];
    nfds_t n = 0;
    if (result_open) fds[n++] = {result[0], POLLIN, 0};
    if (output_open) fds[n++] = {output[0], POLLIN, 0};
    poll(fds, n, static_cast<int>(std::min<int64_t>(left.count(), 50)));
    if (result_open) result_open = drain(result[0], [&](const char* d, size_t k) { reply.append(d, k); });
    if (output_open) output_open = drain(output[0], keep_output);
    if (o.printed_bytes > limits.max_output_bytes) {
      flooded = true;
      break;
    }
    // Ended? (Not reaped yet: while the child is a zombie its pid, and so its
    // process group's id, cannot be reused, so the kill below reaches only its group.)
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      drain(result[0], [&](const char* d, size_t k) { reply.append(d, k); });
      drain(output[0], keep_output);
      break;
    }
  }
  kill(-pid, SIGKILL);  // the child, if still running, and anything it started
  kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  close(result[0]);
  close(output[0]);

  if (timed_out) {
    o.ending = Ending::timed_out;
  } else if (flooded) {
    o.ending = Ending::flooded;
  } else if (decode(reply, o)) {
    // the frame says how it ended
  } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
    o.ending = Ending::timed_out;
  } else if (WIFSIGNALED(status)) {
    o.ending = Ending::crashed;
    o.detail = signal_text(WTERMSIG(status));
  } else if (WIFEXITED(status) && reply.empty()) {
    o.ending = Ending::exited;
    o.detail = fmt::format("exit status {}", WEXITSTATUS(status));
  } else {
    o.ending = Ending::garbled;
  }
  return o;
}

// --- Writer, Reader -------------------------------------------------------------------------

void Writer::u64(uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
void Writer::f64(double v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
void Writer::text(const std::string& s) {
  u64(s.size());
  bytes_ += s;
}
void Writer::floats(const std::vector<float>& v) {
  u64(v.size());
  bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

void Reader::take(void* out, size_t n) {
  if (n > bytes_.size() - at_) throw std::runtime_error("grader: the child's result is cut short");
  std::memcpy(out, bytes_.data() + at_, n);
  at_ += n;
}
uint64_t Reader::u64() {
  uint64_t v = 0;
  take(&v, sizeof v);
  return v;
}
double Reader::f64() {
  double v = 0;
  take(&v, sizeof v);
  return v;
}
std::string Reader::text() {
  const uint64_t n = u64();
  if (n > bytes_.size() - at_) throw std::runtime_error("grader: the child's result is cut short");
  std::string s = bytes_.substr(at_, n);
  at_ += n;
  return s;
}
std::vector<float> Reader::floats() {
  const uint64_t n = u64();
  if (n > (bytes_.size() - at_) / sizeof(float)) throw std::runtime_error("grader: the child's result is cut short");
  std::vector<float> v(n);
  take(v.data(), n * sizeof(float));
  return v;
}

}  // namespace qkv::exercises
