#include "engine.h"
#include "fake_stack.h"
#include "log_sink.h"

#include <unistd.h>

#include <cctype>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

using namespace nosync::san;
using namespace nosync::san::testing;

namespace {

// A strict little JSON checker: the reports must load in jq, Perfetto and the
// linter's tooling, so "looks like JSON" is not enough.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& s) : s_(s) {}
  bool valid() {
    ws();
    if (!value()) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool lit(const char* w) {
    std::size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  bool str() {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      if (s_[i_] == '\\') ++i_;
      else if (s_[i_] == '"') return ++i_, true;
      else if (static_cast<unsigned char>(s_[i_]) < 0x20) return false;
    }
    return false;
  }
  bool num() {
    std::size_t st = i_;
    if (s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == 'e'))
      ++i_;
    return i_ > st;
  }
  bool value() {
    ws();
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      ws();
      if (s_[i_] == '}') return ++i_, true;
      while (true) {
        ws();
        if (!str()) return false;
        ws();
        if (s_[i_++] != ':') return false;
        if (!value()) return false;
        ws();
        if (s_[i_] == ',') { ++i_; continue; }
        if (s_[i_] == '}') return ++i_, true;
        return false;
      }
    }
    if (c == '[') {
      ++i_;
      ws();
      if (s_[i_] == ']') return ++i_, true;
      while (true) {
        if (!value()) return false;
        ws();
        if (s_[i_] == ',') { ++i_; continue; }
        if (s_[i_] == ']') return ++i_, true;
        return false;
      }
    }
    if (c == '"') return str();
    if (lit("true") || lit("false") || lit("null")) return true;
    return num();
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

struct Fixture {
  explicit Fixture(const std::string& options) : t(parse(options)) {
    std::vector<Frame> f = observer_frames();
    f.push_back(lib("cudaStreamSynchronize", "/venv/nvidia/cu13/lib/libcudart.so.13"));
    f.push_back(lib("at::Tensor::item() const", "/venv/torch/lib/libtorch_cpu.so"));
    f.push_back(user("train_step(\"quoted\")", "/work/app/train.cpp", 42));
    f.push_back(user("main", "/work/app/train.cpp", 99));
    item = t.symbolizer->stack(f);
    for (int i = 0; i < 3; ++i) {
      SyncEvent e = event(ApiKind::StreamSync, "cudaStreamSynchronize", item, 2000 * (i + 1));
      e.start_ns = 1000000 * (i + 1);
      e.thread_id = 77;
      t.engine->record(e);
    }
  }
  static Options parse(const std::string& text) {
    Options o;
    EXPECT_EQ(parse_options(text, o), "");
    return o;
  }
  TestEngine t;
  std::vector<std::uintptr_t> item;
};

}  // namespace

TEST(ReportText, HeaderNumberedFramesAndOneSummaryLine) {
  Fixture fx("mode=report:strip_path_prefix=/work/");
  Report r = fx.t.engine->build_report();
  std::string text = write_text(r);
  EXPECT_EQ(text.rfind("==4242==nosync-sanitizer: 1 sync site, 3 host-blocking calls", 0), 0u) << text;
  // Frames: numbered from 0, PC in hex, function, file:line after stripping
  // the prefix; the observer frames (sanitizer, CUPTI, libcuda) are gone.
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n    #0 0x[0-9a-f]+ in cudaStreamSynchronize \(libcudart\.so\.13\+0x0\)\n)")))
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n    #2 0x[0-9a-f]+ in train_step\("quoted"\) app/train\.cpp:42   <== user frame\n)")))
      << text;
  EXPECT_EQ(text.find("libcupti"), std::string::npos);
  EXPECT_NE(text.find("3 blocking calls (cudaStreamSynchronize x3), host stalled 12.0 us in total, max 6.0 us"),
            std::string::npos)
      << text;
  std::size_t summaries = 0;
  for (std::size_t p = text.find("SUMMARY:"); p != std::string::npos; p = text.find("SUMMARY:", p + 1)) ++summaries;
  EXPECT_EQ(summaries, 1u) << text;
  EXPECT_NE(text.find("SUMMARY: nosync-sanitizer: 3 host syncs at 1 site, 12.0 us stalled\n"), std::string::npos)
      << text;
}

TEST(ReportJson, UsesTheLinterFieldNamesAndIsValidJson) {
  Fixture fx("mode=report:format=json");
  std::string json = write_report(fx.t.engine->build_report());
  EXPECT_TRUE(JsonChecker(json).valid()) << json;
  for (const char* field :
       {"\"file\": \"/work/app/train.cpp\"", "\"line\": 42", "\"column\": 0", "\"rule\": \"nosync-item\"",
        "\"severity\": \"warning\"", "\"message\": \"Tensor::item()", "\"count\": 3", "\"total_stall_us\": 12.000",
        "\"max_stall_us\": 6.000", "\"op\": \"at::Tensor::item\"", "\"frames\": [",
        "\"apis\": {\"cudaStreamSynchronize\": 3}", "\"function\": \"train_step(\\\"quoted\\\")\""})
    EXPECT_NE(json.find(field), std::string::npos) << field << "\n" << json;
}

TEST(ReportTrace, OneCompleteSlicePerBlockingCall) {
  Fixture fx("mode=report:format=trace");
  std::string trace = write_report(fx.t.engine->build_report());
  EXPECT_TRUE(JsonChecker(trace).valid()) << trace;
  std::size_t slices = 0;
  for (std::size_t p = trace.find("\"ph\": \"X\""); p != std::string::npos; p = trace.find("\"ph\": \"X\"", p + 1))
    ++slices;
  EXPECT_EQ(slices, 3u) << trace;
  EXPECT_NE(trace.find("\"ts\": 3000.000, \"dur\": 6.000"), std::string::npos) << trace;
  EXPECT_NE(trace.find("\"tid\": 77"), std::string::npos);
  EXPECT_NE(trace.find("\"site\": \"/work/app/train.cpp:42\""), std::string::npos);
}

TEST(ReportTrace, SliceBufferIsBounded) {
  Fixture fx("mode=report:format=trace:trace_max_events=2");
  Report r = fx.t.engine->build_report();
  EXPECT_EQ(r.trace.size(), 2u);
  EXPECT_EQ(r.trace_dropped, 1u);
}

// Clears the launcher rank variables for one test and restores them after.
class RankEnvironment {
 public:
  RankEnvironment() {
    for (const char* var : kVars) {
      const char* v = std::getenv(var);
      saved_.emplace_back(var, v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(var);
    }
  }
  ~RankEnvironment() {
    for (const auto& [var, value] : saved_) {
      if (value) ::setenv(var, value->c_str(), 1);
      else ::unsetenv(var);
    }
  }

 private:
  static constexpr const char* kVars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST(LogSink, NamesTheRankFromTheLauncherEnvironment) {
  RankEnvironment env;
  const std::string pid = std::to_string(::getpid());
  EXPECT_EQ(LogSink("/tmp/run").current_path(), "/tmp/run." + pid);
  ::setenv("SLURM_PROCID", "5", 1);
  EXPECT_EQ(LogSink("/tmp/run").current_path(), "/tmp/run.rank5." + pid);
  ::setenv("RANK", "3", 1);  // torchrun's RANK wins over the others
  EXPECT_EQ(LogSink("/tmp/run").current_path(), "/tmp/run.rank3." + pid);
  ::setenv("RANK", "../3", 1);  // not a number: ignored, the next variable is used
  EXPECT_EQ(LogSink("/tmp/run").current_path(), "/tmp/run.rank5." + pid);
}

TEST(LogSink, WritesOneFilePerProcessNamedWithThePid) {
  RankEnvironment env;
  const std::string prefix = ::testing::TempDir() + "/nosync_log_sink_test";
  LogSink sink(prefix);
  const std::string expected = prefix + "." + std::to_string(::getpid());
  EXPECT_EQ(sink.current_path(), expected);
  std::remove(expected.c_str());
  ASSERT_TRUE(sink.write("first\n"));
  ASSERT_TRUE(sink.write("second\n"));
  std::ifstream in(expected);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "first\nsecond\n");
  std::remove(expected.c_str());
  EXPECT_TRUE(LogSink("stderr").is_stream());
}

TEST(ReportTrace, KernelsGoOnTheirOwnGpuTrackBesideTheSyncs) {
  Fixture fx("mode=report:format=trace:activity=1");
  std::vector<KernelInterval> k = {{1000000, 1002000}, {1003000, 1004500}, {2000, 1000}};  // last: incomplete
  fx.t.engine->record_kernels(k.data(), k.size());
  std::string trace = write_report(fx.t.engine->build_report());
  EXPECT_TRUE(JsonChecker(trace).valid()) << trace;
  EXPECT_NE(trace.find("\"tid\": 0, \"args\": {\"name\": \"GPU (kernels)\"}"), std::string::npos) << trace;
  std::size_t kernels = 0;
  for (std::size_t p = trace.find("\"cat\": \"gpu\""); p != std::string::npos; p = trace.find("\"cat\": \"gpu\"", p + 1))
    ++kernels;
  EXPECT_EQ(kernels, 2u) << trace;
  EXPECT_NE(trace.find("\"name\": \"kernel\", \"cat\": \"gpu\", \"ph\": \"X\", \"ts\": 1000.000, \"dur\": 2.000"),
            std::string::npos)
      << trace;
  std::size_t syncs = 0;
  for (std::size_t p = trace.find("\"cat\": \"host-sync\""); p != std::string::npos;
       p = trace.find("\"cat\": \"host-sync\"", p + 1))
    ++syncs;
  EXPECT_EQ(syncs, 3u);
}
