// Where reports go: stderr, stdout, or "<log_path>.<pid>" — one file per
// process, like compiler-rt's log_path, so DataLoader workers and the parent
// never interleave. The pid is read at each write, so a forked child writes
// its own file. Under a distributed launcher the rank comes first:
// "<log_path>.rank<R>.<pid>" (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or
// SLURM_PROCID), which is what tools/nosync-merge reads.
#pragma once

#include <string>

namespace nosync::san {

class LogSink {
 public:
  explicit LogSink(std::string log_path = "stderr") : path_(std::move(log_path)) {}
  // Appends `text`; returns false (and writes to stderr instead) if the file
  // cannot be opened.
  bool write(const std::string& text) const;
  // The file this process writes to ("stderr"/"stdout" for the streams).
  std::string current_path() const;
  bool is_stream() const { return path_ == "stderr" || path_ == "stdout"; }

 private:
  std::string path_;
};

}  // namespace nosync::san
