// Python programs: the faulthandler text the runtime captures becomes Python
// frames, spliced in where the interpreter's native frames were; the first
// .py frame outside the libraries is the user's; a sync in backward with no
// Python frames names the autograd node.
#include "python_frames.h"

#include <gtest/gtest.h>

#include "attribution.h"
#include "engine.h"
#include "fake_stack.h"

using namespace nosync::san;
using namespace nosync::san::testing;
using nosync::rules::RuleId;

namespace {
const char* kCpu = "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so";
const char* kPython = "/usr/bin/python3.11";

// What python3 hazards.py looks like natively: the op, torch's Python
// bindings, then the interpreter's eval loop.
std::vector<Frame> native_item_from_python() {
  std::vector<Frame> f = observer_frames();
  f.push_back(lib("cudaStreamSynchronize", "/venv/nvidia/cu13/lib/libcudart.so.13"));
  f.push_back(lib("at::native::_local_scalar_dense_cuda(at::Tensor const&)", "/venv/torch/lib/libtorch_cuda.so"));
  f.push_back(lib("at::Tensor::item() const", kCpu));
  f.push_back(lib("torch::autograd::THPVariable_item(_object*, _object*)",
                  "/venv/lib/python3.11/site-packages/torch/lib/libtorch_python.so"));
  f.push_back(lib("_PyEval_EvalFrameDefault", kPython));
  f.push_back(lib("PyEval_EvalCode", kPython));
  f.push_back(lib("Py_BytesMain", kPython));
  return f;
}

std::string dump(std::initializer_list<std::tuple<const char*, int, const char*>> frames) {
  std::string s = "Stack (most recent call first):\n";
  for (const auto& [file, line, fn] : frames)
    s += std::string("  File \"") + file + "\", line " + std::to_string(line) + " in " + fn + "\n";
  return s;
}

Options opts(const std::string& text) {
  Options o;
  EXPECT_EQ(parse_options(text, o), "");
  return o;
}
}  // namespace

TEST(PythonFrames, ParsesFaulthandlerText) {
  auto f = parse_python_stack(dump({{"/work/app/train.py", 42, "step"}, {"/work/app/train.py", 90, "<module>"}}) +
                              "  File \"/x/y.py\", line ??? in broken\n  ...\n");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].file, "/work/app/train.py");
  EXPECT_EQ(f[0].line, 42);
  EXPECT_EQ(f[0].function, "step");
  EXPECT_TRUE(is_python_frame(f[0]));
  EXPECT_EQ(f[1].function, "<module>");
  EXPECT_EQ(f[2].line, 0);
  EXPECT_TRUE(parse_python_stack("Stack (most recent call first):\n  <no Python frame>\n").empty());
}

TEST(PythonFrames, LibraryFilesAreNotTheUsers) {
  EXPECT_TRUE(is_python_library_file("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py"));
  EXPECT_TRUE(is_python_library_file("/usr/lib/python3/dist-packages/numpy/core/numeric.py"));
  EXPECT_TRUE(is_python_library_file("/usr/lib/python3.12/runpy.py"));
  EXPECT_TRUE(is_python_library_file("/opt/py/lib/python3.13t/threading.py"));
  EXPECT_TRUE(is_python_library_file("<frozen runpy>"));
  EXPECT_FALSE(is_python_library_file("/work/app/train.py"));
  EXPECT_FALSE(is_python_library_file("/work/lib/python_utils/train.py"));
  EXPECT_FALSE(is_python_library_file("<string>"));  // python -c
  // A user function named like the C API is still the user's.
  Frame f{0, "PyTorchStep", "/work/app/train.py", 3, std::string(kPythonModule), 0};
  EXPECT_FALSE(is_runtime_frame(f));
}

TEST(PythonFrames, SplicedWhereTheInterpreterBegins) {
  auto frames = splice_python_frames(
      native_item_from_python(),
      parse_python_stack(dump({{"/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1750, "_call_impl"},
                               {"/work/app/train.py", 42, "step"},
                               {"/work/app/train.py", 90, "<module>"}})));
  frames.erase(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(first_printed_frame(frames)));
  ASSERT_EQ(frames.size(), 7u);
  EXPECT_EQ(frames[3].function, "torch::autograd::THPVariable_item(_object*, _object*)");
  EXPECT_EQ(frames[4].function, "_call_impl");
  const std::size_t u = first_user_frame(frames);
  ASSERT_EQ(u, 5u);
  EXPECT_EQ(frames[u].file, "/work/app/train.py");
  EXPECT_EQ(frames[u].line, 42);
}

TEST(PythonFrames, BackwardNodeNamesTheForwardOp) {
  std::vector<Frame> f = observer_frames();
  f.push_back(lib("at::native::embedding_backward_cuda_kernel(...)", "/venv/torch/lib/libtorch_cuda.so"));
  f.push_back(lib("torch::autograd::generated::EmbeddingBackward0::apply(std::vector<at::Tensor>&&)", kCpu));
  f.push_back(lib("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", kCpu));
  EXPECT_EQ(backward_node_of(f), "EmbeddingBackward0");
  EXPECT_EQ(describe_backward("EmbeddingBackward0"), "in backward of embedding (EmbeddingBackward0)");
  EXPECT_EQ(describe_backward("IndexPutBackward0"), "in backward of index_put (IndexPutBackward0)");
  EXPECT_EQ(backward_node_of(native_item_from_python()), "");
}

TEST(PythonFrames, BackwardNodeSkipsTheHelpersItCalls) {
  // As on the H200: the node's helper in generated::details is the inner frame.
  std::vector<Frame> f = observer_frames();
  f.push_back(lib("at::native::nonzero_cuda(at::Tensor const&)", "/venv/torch/lib/libtorch_cuda.so"));
  f.push_back(lib("torch::autograd::generated::details::index_backward(at::Tensor, c10::ArrayRef<long>)", kCpu));
  f.push_back(lib("torch::autograd::generated::IndexBackward0::apply(std::vector<at::Tensor>&&)", kCpu));
  EXPECT_EQ(backward_node_of(f), "IndexBackward0");
}

// Two .py lines calling the same op share every native frame: the Python
// stack keeps them apart, and each finding names its own line.
TEST(PythonFrames, EngineReportsEachPythonLine) {
  TestEngine t(opts("mode=report"));
  auto pcs = t.symbolizer->stack(native_item_from_python());
  const std::string a = dump({{"/work/app/train.py", 42, "step"}, {"/work/app/train.py", 90, "<module>"}});
  const std::string b = dump({{"/work/app/train.py", 57, "log_metrics"}, {"/work/app/train.py", 91, "<module>"}});
  for (int i = 0; i < 3; ++i) {
    SyncEvent e = event(ApiKind::StreamSync, "cudaStreamSynchronize", pcs, 2000);
    e.python_stack = a.data();
    e.python_stack_len = static_cast<std::uint32_t>(a.size());
    t.engine->record(e);
  }
  SyncEvent e = event(ApiKind::StreamSync, "cudaStreamSynchronize", pcs, 1000);
  e.python_stack = b.data();
  e.python_stack_len = static_cast<std::uint32_t>(b.size());
  t.engine->record(e);
  Report r = t.engine->build_report();
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].file, "/work/app/train.py");
  EXPECT_EQ(r.findings[0].line, 42);
  EXPECT_EQ(r.findings[0].function, "step");
  EXPECT_EQ(r.findings[0].rule, RuleId::Item);
  EXPECT_EQ(r.findings[0].op, "at::Tensor::item");
  EXPECT_EQ(r.findings[0].count, 3u);
  EXPECT_EQ(r.findings[1].line, 57);
  const std::string text = write_text(r);
  EXPECT_NE(text.find("host sync [nosync-item] in at::Tensor::item at /work/app/train.py:42"), std::string::npos)
      << text;
  EXPECT_NE(text.find("in step /work/app/train.py:42 (python)   <== user frame"), std::string::npos) << text;
  const std::string json = write_json(r);
  EXPECT_NE(json.find("\"file\": \"/work/app/train.py\", \"line\": 42"), std::string::npos) << json;
  EXPECT_NE(json.find("\"module\": \"<python>\", \"user\": true"), std::string::npos) << json;
}

TEST(PythonFrames, SyncFreeRegionNamesThePythonLine) {
  TestEngine t(opts("mode=report"));
  auto pcs = t.symbolizer->stack(native_item_from_python());
  const std::string a = dump({{"/work/app/train.py", 42, "step"}});
  const std::uint64_t token = t.engine->region_begin();
  SyncEvent e = event(ApiKind::StreamSync, "cudaStreamSynchronize", pcs);
  e.python_stack = a.data();
  e.python_stack_len = static_cast<std::uint32_t>(a.size());
  t.engine->record(e);
  RegionResult r = t.engine->region_end(token);
  EXPECT_EQ(r.syncs, 1u);
  EXPECT_NE(r.description.find("nosync-item at /work/app/train.py:42 in step"), std::string::npos) << r.description;
}

TEST(PythonFrames, BackwardWithoutPythonFramesSaysSo) {
  TestEngine t(opts("mode=report"));
  std::vector<Frame> f = observer_frames();
  f.push_back(lib("cudaStreamSynchronize", "/venv/nvidia/cu13/lib/libcudart.so.13"));
  f.push_back(lib("at::native::_local_scalar_dense_cuda(at::Tensor const&)", "/venv/torch/lib/libtorch_cuda.so"));
  f.push_back(lib("at::Tensor::item() const", kCpu));
  f.push_back(lib("torch::autograd::generated::EmbeddingBackward0::apply(std::vector<at::Tensor>&&)", kCpu));
  f.push_back(lib("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", kCpu));
  auto pcs = t.symbolizer->stack(f);
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", pcs));
  Report r = t.engine->build_report();
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].file, "");
  EXPECT_EQ(r.findings[0].function, "in backward of embedding (EmbeddingBackward0)");
  EXPECT_NE(write_text(r).find("at in backward of embedding (EmbeddingBackward0)"), std::string::npos)
      << write_text(r);
}
