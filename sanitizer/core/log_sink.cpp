#include "log_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace nosync::san {

namespace {
// write(2) loop: no stdio buffers to flush or inherit across fork.
bool write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}
// Distributed launchers (torchrun, mpirun, srun) put each process's rank in
// the environment; naming it in the file lets a merge step line ranks up.
// Only a plain number is taken, so the variable cannot steer the path.
std::string rank_from_environment() {
  for (const char* var : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    bool digits = true;
    for (const char* c = v; *c; ++c) digits = digits && std::isdigit(static_cast<unsigned char>(*c));
    if (digits) return v;
  }
  return "";
}
}  // namespace

std::string LogSink::current_path() const {
  if (is_stream()) return path_;
  const std::string rank = rank_from_environment();
  return path_ + (rank.empty() ? "" : ".rank" + rank) + "." + std::to_string(::getpid());
}

bool LogSink::write(const std::string& text) const {
  if (path_ == "stdout") return write_all(1, text);
  if (path_ == "stderr") return write_all(2, text);
  const std::string file = current_path();
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    write_all(2, "nosync-sanitizer: cannot open log file '" + file + "': " + std::strerror(errno) +
                     "; writing to stderr\n");
    write_all(2, text);
    return false;
  }
  bool ok = write_all(fd, text);
  ::close(fd);
  return ok;
}

}  // namespace nosync::san
