#include "log_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
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
}  // namespace

std::string LogSink::current_path() const {
  if (is_stream()) return path_;
  return path_ + "." + std::to_string(::getpid());
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
