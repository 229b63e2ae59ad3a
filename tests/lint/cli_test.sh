#!/usr/bin/env bash
# usage: cli_test.sh <nosync-lint> <fixtures dir> <torch include dirs, ':'-separated> <rules.def> <nosync-lint-fake>
#                    [<libnosync-tidy.so> <examples/train_hazards.cpp>]
# Each check runs a real binary and asserts its exit code and output.
# nosync-lint-fake is the same driver linked with a fake check module (see
# fixtures/fake_module): it flags every `.item()` call, so the tool's own
# features are tested against findings that do not move with the real checks.
set -u
LINT=$1 FIX=$(cd "$2" && pwd) TORCH_INC=$3 RULES_DEF=$4 FAKE=$5 PLUGIN=${6:-} EXAMPLE=${7:-}
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export NO_COLOR=1

ok() { echo "ok   $1"; pass=$((pass+1)); }
bad() { echo "FAIL $1"; [[ -f $tmp/out ]] && sed 's/^/    /' "$tmp/out" | head -30; fail=$((fail+1)); }

# expect <name> <expected exit code> <regex the output must match> -- <command...>
expect() {
  local name=$1 code=$2 pattern=$3; shift 4
  "$@" >"$tmp/out" 2>&1; local rc=$?
  if [[ $rc -ne $code ]]; then bad "$name: exit $rc, expected $code"; return; fi
  if [[ -n $pattern ]] && ! grep -Eq -- "$pattern" "$tmp/out"; then bad "$name: output does not match /$pattern/"; return; fi
  ok "$name"
}
# expect_lines <name> <n>: the last command's output has exactly n lines (one-line errors).
expect_lines() {
  local n; n=$(wc -l <"$tmp/out")
  if [[ $n -eq $2 ]]; then ok "$1"; else bad "$1: $n output lines, expected $2"; fi
}
# json_assert <name> <json file> <python expression over `d`>
json_assert() {
  if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert $3, d" "$2" >"$tmp/py" 2>&1; then ok "$1"
  else bad "$1: assertion failed: $3"; sed 's/^/    /' "$tmp/py" | tail -3; fi
}

# ------------------------------------------------------------ basics
expect version 0 '^nosync-lint [0-9]+\.[0-9]+\.[0-9]+ \(Clang/LLVM 1[0-9]\.' -- "$LINT" --version
expect help 0 'usage: nosync-lint' -- "$LINT" --help
expect help-says-notes-hidden 0 'default warning: low-severity' -- "$LINT" --help
expect unknown-option 2 "unknown option '--bogus'" -- "$LINT" --bogus
expect_lines unknown-option-one-line 1
expect bad-format 2 "--format must be text, json or sarif" -- "$LINT" --format=xml x.cpp
expect bad-jobs 2 "-j needs a number" -- "$LINT" -j zero x.cpp
expect no-input 2 'no input files' -- "$LINT"
expect missing-file 2 'no such file: .*does-not-exist.cpp' -- "$LINT" "$FIX/does-not-exist.cpp" --
expect_lines missing-file-one-line 1
expect non-cxx-file 2 'not_cpp.py is not a C\+\+ source file' -- "$LINT" "$FIX/not_cpp.py" --
expect_lines non-cxx-one-line 1
expect unknown-rule-in-checks 2 "--checks: 'nosync-itme' matches no rule" -- "$LINT" --checks=-*,nosync-itme "$FIX/parse_ok_plain.cpp" --
expect explain 0 '^nosync-item \(warning' -- "$LINT" --explain nosync-item
# The doc page itself must follow the catalog entry.
first_doc_line=$(head -1 "$(dirname "$RULES_DEF")/../../docs/nosync-item.md")
if grep -Fxq -- "$first_doc_line" "$tmp/out"; then ok "explain-prints-doc-page"; else bad "explain-prints-doc-page"; fi
expect explain-unknown 2 "unknown rule 'nosync-nope'" -- "$LINT" --explain nosync-nope

# --list-rules prints exactly the catalog: one line per NOSYNC_RULE entry.
n_rules=$(grep -c '^NOSYNC_RULE(' "$RULES_DEF")
"$LINT" --list-rules >"$tmp/rules" 2>&1
listed=$(grep -c '^nosync-' "$tmp/rules")
if [[ $listed -eq $n_rules && $n_rules -ge 9 ]]; then ok "list-rules ($listed rules)"
else bad "list-rules: listed $listed, catalog has $n_rules"; fi

# ------------------------------------------------------------ real parses
expect parse-plain 0 '' -- "$LINT" "$FIX/parse_ok_plain.cpp" -- -std=c++17
expect parse-error 3 'parse_error.cpp parsed with [0-9]+ errors?' -- "$LINT" "$FIX/parse_error.cpp" -- -std=c++17
expect parse-error-shows-compiler-error 3 "use of undeclared identifier 'undeclared_function_call'" -- "$LINT" "$FIX/parse_error.cpp" -- -std=c++17
if [[ -n "$TORCH_INC" ]]; then
  inc=(); IFS=: read -ra dirs <<<"$TORCH_INC"; for d in "${dirs[@]}"; do inc+=(-isystem "$d"); done
  expect parse-libtorch 0 '' -- "$LINT" --no-cache "$FIX/parse_ok_libtorch.cpp" -- -std=c++17 "${inc[@]}"
  # A missing third-party include is reported and skipped; the rest of the file
  # is still linted (exit 3: it did not parse cleanly).
  expect missing-include-reported 3 "missing_include.cpp:5:[0-9]+: error: 'not_installed/env.h' file not found; nosync-lint skipped it" -- \
    "$LINT" --no-cache "$FIX/missing_include.cpp" -- -std=c++17 "${inc[@]}"
  expect missing-include-still-linted 3 'missing_include.cpp:11:[0-9]+: warning: .*\[nosync-item\]' -- \
    "$LINT" --no-cache "$FIX/missing_include.cpp" -- -std=c++17 "${inc[@]}"
  # A header given without -x is C++, not a C header.
  expect header-is-cxx 1 'train_loop_in_header.h:11:[0-9]+: warning: .*\[nosync-item\]' -- \
    "$LINT" --no-cache "$FIX/train_loop_in_header.h" -- -std=c++17 "${inc[@]}"
  # A compile command written for LibTorch 1.x (-std=c++14) is parsed as C++17,
  # which LibTorch 2.x needs, with a note; its findings are kept.
  expect old-std-raised-note 1 'LibTorch 2.x needs C\+\+17; parsing with -std=c\+\+17 instead of .*-std=c\+\+14' -- \
    "$LINT" --no-cache "$FIX/train_loop_in_header.h" -- -std=c++14 "${inc[@]}"
  expect old-std-raised-findings 1 'train_loop_in_header.h:11:[0-9]+: warning: .*\[nosync-item\]' -- \
    "$LINT" --no-cache "$FIX/train_loop_in_header.h" -- -std=gnu++14 "${inc[@]}"
  # Context across files: alone, helpers.cpp's clip() is reached only from
  # setup (a note) and print_final() has no caller (a warning); with train.cpp
  # in the same run, clip() is called from the training loop and print_final()
  # once after it.
  PC="$FIX/project_context"
  expect context-one-file 1 'helpers.cpp:10:[0-9]+: remark: .clip_grad_norm_\(\). in code called only from' -- \
    "$LINT" --no-cache --min-severity=note "$PC/helpers.cpp" -- -std=c++17 "${inc[@]}"
  expect context-one-file-item 1 "helpers.cpp:15:[0-9]+: warning: 'item\(\)'" -- \
    "$LINT" --no-cache --min-severity=note "$PC/helpers.cpp" -- -std=c++17 "${inc[@]}"
  expect context-project-hot 1 "helpers.cpp:10:[0-9]+: warning: 'clip_grad_norm_\(\)' in 'clip', which is called from a loop" -- \
    "$LINT" --no-cache --min-severity=note "$PC/helpers.cpp" "$PC/train.cpp" -- -std=c++17 "${inc[@]}"
  expect context-project-once 1 "helpers.cpp:15:[0-9]+: remark: 'item\(\)' in one-off setup/export code" -- \
    "$LINT" --no-cache --min-severity=note "$PC/helpers.cpp" "$PC/train.cpp" -- -std=c++17 "${inc[@]}"
  # A parameter every caller in the run hands a host copy: no sync to report.
  expect context-one-file-param 1 "helpers.cpp:22:[0-9]+: warning: 'item\\(\\)'" -- \
    "$LINT" --no-cache --min-severity=note "$PC/helpers.cpp" -- -std=c++17 "${inc[@]}"
  expect context-project-param-run 1 "helpers.cpp:10:[0-9]+: warning" -- \
    "$LINT" --no-cache --min-severity=note "$PC/helpers.cpp" "$PC/train.cpp" -- -std=c++17 "${inc[@]}"
  if grep -Eq "helpers.cpp:22:[0-9]+:" "$tmp/out"; then bad "context-project-param-host: print_host's item() still reported"
  else ok "context-project-param-host"; fi
  # A member filled by a setter whose callers are in another file: every call
  # of the run passes a host tensor, so the member's item() reads host memory;
  # one call that passes a GPU tensor keeps the warning.
  expect context-member-alone 1 "meter.cpp:10:[0-9]+: warning: 'item\(\)'" -- \
    "$LINT" --no-cache "$PC/meter.cpp" -- -std=c++17 "${inc[@]}"
  "$LINT" --no-cache --min-severity=note "$PC/meter.cpp" "$PC/run_meter.cpp" -- -std=c++17 "${inc[@]}" \
    >"$tmp/out" 2>&1
  if grep -Eq "meter.cpp:10:[0-9]+:" "$tmp/out"; then bad "context-member-host: the host reading's item() still reported"
  else ok "context-member-host"; fi
  sed 's/torch::tensor({1.0, 2.0})/torch::tensor({1.0, 2.0}).cuda()/' "$PC/run_meter.cpp" >"$tmp/run_meter_cuda.cpp"
  expect context-member-cuda 1 "meter.cpp:10:[0-9]+: warning: 'item\(\)'" -- \
    "$LINT" --no-cache "$PC/meter.cpp" "$tmp/run_meter_cuda.cpp" -- -std=c++17 -I"$PC" "${inc[@]}"
  expect context-project-cpu 0 "helpers.cpp:10:[0-9]+: remark: 'clip_grad_norm_\(\)' in a program that never uses CUDA" -- \
    "$LINT" --no-cache --min-severity=note "$PC/helpers.cpp" "$PC/train_cpu.cpp" -- -std=c++17 "${inc[@]}"
  expect context-project-library-not-cpu 1 "helpers.cpp:10:[0-9]+: warning: 'clip_grad_norm_\(\)' in 'clip', which is called from a loop" -- \
    "$LINT" --no-cache --min-severity=note "$PC/helpers.cpp" "$PC/lib_cpu.cpp" -- -std=c++17 "${inc[@]}"
  # A library file linted alone: the project's other sources (ProjectScan.h)
  # say whether the program ever uses CUDA. Twin projects differ in main().
  for kind in cpu cuda; do
    mkdir -p "$tmp/proj_$kind/src"
    echo 'project(p CXX)' >"$tmp/proj_$kind/CMakeLists.txt"
    cp "$PC/helpers.cpp" "$tmp/proj_$kind/src/helpers.cpp"
  done
  cp "$PC/train_cpu.cpp" "$tmp/proj_cpu/src/train.cpp"
  cp "$PC/train.cpp" "$tmp/proj_cuda/src/train.cpp"
  expect context-project-scan-cpu 0 "helpers.cpp:15:[0-9]+: remark: 'item\(\)' in a program that never uses CUDA" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_cpu/src/helpers.cpp" -- -std=c++17 "${inc[@]}"
  # The CUDA twin: its train.cpp, read as text, calls clip() every step.
  expect context-project-scan-cuda 1 "helpers.cpp:10:[0-9]+: warning: 'clip_grad_norm_\(\)' in 'clip', which is called from a loop" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_cuda/src/helpers.cpp" -- -std=c++17 "${inc[@]}"
  # A pre-commit run of helpers.cpp alone: train.cpp is not linted, but its
  # text (TextCalls.h) says clip() runs every step and print_final() once.
  mkdir -p "$tmp/proj_text/src" "$tmp/proj_text/app"
  echo 'project(p CXX)' >"$tmp/proj_text/CMakeLists.txt"
  cp "$PC/helpers.cpp" "$tmp/proj_text/src/helpers.cpp"
  cp "$PC/train.cpp" "$tmp/proj_text/app/train.cpp"
  expect context-text-hot 1 "helpers.cpp:10:[0-9]+: warning: 'clip_grad_norm_\(\)' in 'clip', which is called from a loop" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_text/src/helpers.cpp" -- -std=c++17 "${inc[@]}"
  expect context-text-once 1 "helpers.cpp:15:[0-9]+: remark: 'item\(\)' in one-off setup/export code" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_text/src/helpers.cpp" -- -std=c++17 "${inc[@]}"
  # A qmake project (a .pro file where CMakeLists.txt would be) is a project too.
  mkdir -p "$tmp/proj_qmake/src" "$tmp/proj_qmake/app"
  echo 'SOURCES += src/helpers.cpp app/train.cpp' >"$tmp/proj_qmake/trainer.pro"
  cp "$PC/helpers.cpp" "$tmp/proj_qmake/src/helpers.cpp"
  cp "$PC/train.cpp" "$tmp/proj_qmake/app/train.cpp"
  expect context-text-qmake 1 "helpers.cpp:15:[0-9]+: remark: 'item\(\)' in one-off setup/export code" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_qmake/src/helpers.cpp" -- -std=c++17 "${inc[@]}"
  # A main() whose parse lost its call of run_test (the declaration names a
  # type of a header that is not installed): the file's text still shows the
  # call, once after training, so run_test's loop is an evaluation pass.
  expect context-errors-alone 1 "errors_test.cpp:17:[0-9]+: warning: 'item\(\)' inside a loop" -- \
    "$LINT" --no-cache "$PC/errors_test.cpp" -- -std=c++17 "${inc[@]}"
  expect context-errors-text-calls 3 "errors_test.cpp:17:[0-9]+: remark: 'item\(\)' in one-off setup/export code" -- \
    "$LINT" --no-cache --min-severity=note "$PC/errors_test.cpp" "$PC/errors_main.cpp" -- -std=c++17 "${inc[@]}"
  # CUDA named only in code that does not parse is CUDA: no CPU program.
  expect context-errors-cuda-text 3 "errors_cuda.cpp:9:[0-9]+: warning: 'masked_select\(\)' inside a loop" -- \
    "$LINT" --no-cache "$PC/errors_cuda.cpp" -- -std=c++17 "${inc[@]}"
  # A definition whose parameter types come from a header that is not found
  # keeps its body: no typo correction turns it into a variable.
  expect context-errors-typo 3 "errors_typo.cpp:19:[0-9]+: warning: 'item\(\)' inside a loop" -- \
    "$LINT" --no-cache "$PC/errors_typo.cpp" -- -std=c++17 "${inc[@]}"
  # A header the linted file includes is also a project source read as text:
  # its constructor's call of load(), which the AST holds, stays one-off.
  mkdir -p "$tmp/proj_ctor/src"
  echo 'project(p CXX)' >"$tmp/proj_ctor/CMakeLists.txt"
  printf '%s\n' '#pragma once' '#include <torch/torch.h>' 'struct NetImpl : torch::nn::Module {' \
    '  explicit NetImpl(int n) { load(); }' '  void load();' '};' >"$tmp/proj_ctor/src/model.h"
  printf '%s\n' '#include "model.h"' 'void NetImpl::load() {' '  for (auto& p : parameters()) p.mul_(0.5);' '}' \
    'int main() { torch::Device d(torch::kCUDA); NetImpl net(3); }' >"$tmp/proj_ctor/src/model.cpp"
  expect context-text-header-constructor 0 "model.cpp:3:[0-9]+: remark: loop over 'parameters\(\)' in code called only from" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_ctor/src/model.cpp" -- -std=c++17 "${inc[@]}"
  # A header linted beside the program that includes it: alone it does not
  # know Model (its include is the program's), so its unit calls the function
  # evaluate(int &, ...), and the program's throttled call of
  # evaluate(Model &, ...) decides it there too: one remark, no warning.
  mkdir -p "$tmp/proj_namesake/src"
  echo 'project(p CXX)' >"$tmp/proj_namesake/CMakeLists.txt"
  printf '%s\n' '#pragma once' '#include <torch/torch.h>' 'struct Model { torch::nn::Linear fc{4, 1}; };' \
    >"$tmp/proj_namesake/src/model.h"
  printf '%s\n' '#pragma once' '#include <torch/torch.h>' 'inline float evaluate(Model& m, const torch::Tensor& x) {' \
    '  float total = 0;' '  for (int i = 0; i < 100; ++i) total += x[i].sum().item<float>();' '  return total;' '}' \
    >"$tmp/proj_namesake/src/eval.h"
  printf '%s\n' '#include "model.h"' '#include "eval.h"' '#include <iostream>' 'int main() {' \
    '  torch::Device d(torch::kCUDA);' '  Model m;' '  m.fc->to(d);' '  torch::optim::SGD opt(m.fc->parameters(), 0.1);' \
    '  auto x = torch::randn({100, 4}, d);' '  for (int epoch = 0; epoch < 50; ++epoch) {' \
    '    opt.zero_grad();' '    m.fc->forward(x).sum().backward();' '    opt.step();' \
    '    if (epoch % 10 == 0) std::cout << evaluate(m, x) << "\\n";' '  }' '}' >"$tmp/proj_namesake/src/main.cpp"
  expect context-project-namesake 3 "eval.h:5:[0-9]+: remark: 'item\(\)' in code called only from throttled" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_namesake/src/eval.h" "$tmp/proj_namesake/src/main.cpp" -- \
    -std=c++17 "${inc[@]}"
  if grep -Eq "eval.h:5:[0-9]+: warning" "$tmp/out"; then bad "context-project-namesake-no-warning: the header's unit still warns"
  else ok "context-project-namesake-no-warning"; fi
  # A text call is in the class its body is written in: Runner::run() (text
  # only) calls evaluate(), which reports once; Engine::run(), a function of
  # the run with the same name, is not that caller (it has none).
  mkdir -p "$tmp/proj_runner/src" "$tmp/proj_runner/app"
  echo 'project(p CXX)' >"$tmp/proj_runner/CMakeLists.txt"
  printf '%s\n' '#include <torch/torch.h>' 'struct Engine { float run(const torch::Tensor& x); };' \
    'float Engine::run(const torch::Tensor& x) { return x.mean().item<float>(); }' \
    'float report(const torch::Tensor& x) { return x.sum().item<float>(); }' >"$tmp/proj_runner/src/engine.cpp"
  printf '%s\n' '#pragma once' 'struct Runner {' '  torch::Tensor x;' '  void run() { evaluate(); }' \
    '  void evaluate() { report(x); }' '};' >"$tmp/proj_runner/app/runner.h"
  printf '%s\n' '#include "runner.h"' 'int main() { torch::Device d(torch::kCUDA); Runner r; r.run(); }' \
    >"$tmp/proj_runner/app/main.cpp"
  expect context-text-caller-class 1 "engine.cpp:4:[0-9]+: remark: 'item\(\)' in one-off setup/export code" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_runner/src/engine.cpp" -- -std=c++17 "${inc[@]}"
  # A source in a tests/ directory, or named test_*, holds the project's
  # tests: its loops are test code, whoever calls them.
  mkdir -p "$tmp/proj_tests/tests"
  echo 'project(p CXX)' >"$tmp/proj_tests/CMakeLists.txt"
  printf '%s\n' '#include <torch/torch.h>' 'float probe(const torch::Tensor& x) {' '  float t = 0;' \
    '  for (int i = 0; i < 10; ++i) t += x[i].sum().item<float>();' '  return t;' '}' >"$tmp/proj_tests/tests/probe.cpp"
  expect context-test-directory 0 "probe.cpp:4:[0-9]+: remark: 'item\(\)' in test code" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_tests/tests/probe.cpp" -- -std=c++17 "${inc[@]}"
  cp "$tmp/proj_tests/tests/probe.cpp" "$tmp/proj_tests/test_probe.cpp"
  expect context-test-file-name 0 "test_probe.cpp:4:[0-9]+: remark: 'item\(\)' in test code" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_tests/test_probe.cpp" -- -std=c++17 "${inc[@]}"
  # A text call reaches only the class its object was declared with: a loop
  # calling segmentor_.Predict() (a Segmentor) does not make Detector::Predict
  # hot; the same loop over a Detector member does.
  for member in Segmentor Detector; do
    mkdir -p "$tmp/proj_recv$member/src" "$tmp/proj_recv$member/app"
    echo 'project(p CXX)' >"$tmp/proj_recv$member/CMakeLists.txt"
    printf '%s\n' '#include <torch/torch.h>' '#include <iostream>' \
      'struct Detector { void Predict(const torch::Tensor& t); };' \
      'void Detector::Predict(const torch::Tensor& t) { std::cout << t.sum().item<float>(); }' \
      'int main() { torch::Device d(torch::kCUDA); Detector det; det.Predict(torch::ones(3, d)); }' \
      >"$tmp/proj_recv$member/src/detector.cpp"
    printf '%s\n' 'struct Segmentor { void Predict(int frame); };' \
      "struct Stereo { $member member_; void run(); };" \
      'void Stereo::run() { for (int i = 0; i < 100; ++i) member_.Predict(i); }' \
      >"$tmp/proj_recv$member/app/stereo.cpp"
  done
  expect context-text-receiver-other-class 0 "detector.cpp:4:[0-9]+: remark: 'item\(\)' in one-off setup/export code" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_recvSegmentor/src/detector.cpp" -- -std=c++17 "${inc[@]}"
  expect context-text-receiver-same-class 1 "detector.cpp:4:[0-9]+: warning: 'item\(\)' in 'Predict', which is called from a loop" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_recvDetector/src/detector.cpp" -- -std=c++17 "${inc[@]}"
  # Two programs of one project: an inference tool's frame loop is its
  # workload, though the trainer beside it trains; a main() that drives a
  # trainer library evaluates once after training.
  mkdir -p "$tmp/proj_programs/src"
  echo 'project(p CXX)' >"$tmp/proj_programs/CMakeLists.txt"
  printf '%s\n' '#include <torch/torch.h>' 'void fit_model(torch::nn::Linear& model, torch::Device d) {' \
    '  torch::optim::SGD opt(model->parameters(), 0.1);' \
    '  for (int step = 0; step < 1000; ++step) {' \
    '    auto loss = model->forward(torch::randn({8, 4}, d)).pow(2).mean();' \
    '    opt.zero_grad(); loss.backward(); opt.step();' '  }' '}' >"$tmp/proj_programs/src/trainer.cpp"
  for prog in infer drive; do
    fit='  torch::load(model, "model.pt");'
    [[ $prog == drive ]] && fit='  fit_model(model, d);'
    printf '%s\n' '#include <torch/torch.h>' '#include <iostream>' \
      'void fit_model(torch::nn::Linear& model, torch::Device d);' 'int main() {' \
      '  torch::Device d(torch::kCUDA);' '  torch::nn::Linear model(4, 1);' "$fit" \
      '  for (int frame = 0; frame < 1000; ++frame)' \
      '    std::cout << model->forward(torch::randn({1, 4}, d)).item<float>() << "\n";' '}' \
      >"$tmp/proj_programs/src/$prog.cpp"
  done
  expect context-program-infer-beside-trainer 1 "infer.cpp:9:[0-9]+: warning: 'item\(\)' inside a loop" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_programs/src/infer.cpp" "$tmp/proj_programs/src/trainer.cpp" \
    -- -std=c++17 "${inc[@]}"
  expect context-program-drives-trainer 0 "drive.cpp:9:[0-9]+: remark: 'item\(\)' in one-off setup/export code" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_programs/src/drive.cpp" "$tmp/proj_programs/src/trainer.cpp" \
    -- -std=c++17 "${inc[@]}"
  # A GUI program's main() comes from a framework macro (wxIMPLEMENT_APP):
  # a project with that and no CUDA is a CPU program.
  mkdir -p "$tmp/proj_wx/src"
  echo 'project(p CXX)' >"$tmp/proj_wx/CMakeLists.txt"
  cp "$PC/helpers.cpp" "$tmp/proj_wx/src/helpers.cpp"
  printf '#include <wx/wx.h>\nclass App : public wxApp {};\nwxIMPLEMENT_APP(App);\n' >"$tmp/proj_wx/src/app.cpp"
  expect context-project-scan-wx-entry 0 "helpers.cpp:15:[0-9]+: remark: 'item\(\)' in a program that never uses CUDA" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_wx/src/helpers.cpp" -- -std=c++17 "${inc[@]}"
  # Text callers: a loop of two turns with literal bounds is straight-line code
  # (the text reads it like the AST's isTinyLoop); one of a hundred is a loop.
  for turns in 2 100; do
    mkdir -p "$tmp/proj_tiny$turns/src" "$tmp/proj_tiny$turns/app"
    echo 'project(p CXX)' >"$tmp/proj_tiny$turns/CMakeLists.txt"
    cp "$PC/helpers.cpp" "$tmp/proj_tiny$turns/src/helpers.cpp"
    sed "s/^  print_final(loss);/  for (int i = 0; i < $turns; ++i) print_final(loss);/" "$PC/train.cpp" \
      >"$tmp/proj_tiny$turns/app/train.cpp"
  done
  expect context-text-tiny-loop 1 "helpers.cpp:15:[0-9]+: remark: 'item\(\)' in one-off setup/export code" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_tiny2/src/helpers.cpp" -- -std=c++17 "${inc[@]}"
  expect context-text-long-loop 1 "helpers.cpp:15:[0-9]+: warning: 'item\(\)' in 'print_final', which is called from a loop" -- \
    "$LINT" --no-cache --min-severity=note "$tmp/proj_tiny100/src/helpers.cpp" -- -std=c++17 "${inc[@]}"
  # A template implementation file that refuses to be parsed alone (#error
  # unless its header included it) is parsed where Trainer.hpp includes it:
  # its findings, no compiler error, exit 1 (findings) rather than 3.
  mkdir -p "$tmp/proj_tpp/include"
  echo 'project(p CXX)' >"$tmp/proj_tpp/CMakeLists.txt"
  printf '%s\n' '#ifndef TRAINER_HPP' '#define TRAINER_HPP' '#include <torch/torch.h>' \
    'template <typename M> struct Trainer { float fit(M& model, std::vector<torch::Tensor>& batches); };' \
    '#include "Trainer.tpp"' '#endif' >"$tmp/proj_tpp/include/Trainer.hpp"
  printf '%s\n' '#ifndef TRAINER_HPP' '#error "include Trainer.hpp instead"' '#endif' \
    'template <typename M> float Trainer<M>::fit(M& model, std::vector<torch::Tensor>& batches) {' \
    '  float total = 0;' '  for (auto& b : batches) total += model->forward(b).sum().template item<float>();' \
    '  return total;' '}' >"$tmp/proj_tpp/include/Trainer.tpp"
  expect header-through-includer 1 "Trainer.tpp:6:[0-9]+: warning: 'item\(\)' .*\[nosync-item\]" -- \
    "$LINT" --no-cache "$tmp/proj_tpp/include/Trainer.tpp" -- -std=c++17 "${inc[@]}"
  "$LINT" --no-cache --format=json --min-severity=note "$tmp/proj_text/src/helpers.cpp" -- -std=c++17 "${inc[@]}" \
    >"$tmp/text.json" 2>/dev/null
  json_assert context-text-json "$tmp/text.json" \
    "any(f['line'] == 10 and 'app/train.cpp:15' in f['context'] and 'source text' in f['context'] for f in d)"
  "$LINT" --no-cache --format=json --min-severity=note "$PC/helpers.cpp" "$PC/train.cpp" -- -std=c++17 "${inc[@]}" \
    >"$tmp/pc.json" 2>/dev/null
  json_assert context-json "$tmp/pc.json" \
    "any(f['line'] == 10 and 'call at train.cpp:15' in f['context'] and '||' not in f['context'] for f in d)"
  # The real checks are linked in: a per-step item() in a loop is a warning.
  expect real-checks-linked 1 'real_item_in_loop.cpp:10:[0-9]+: warning: .*\[nosync-item\]' -- \
    "$LINT" --no-cache "$FIX/real_item_in_loop.cpp" -- -std=c++17 "${inc[@]}"
  # nosync-lint matches only inside user declarations (UserCodeScope); stock
  # clang-tidy with the plugin traverses everything. Same findings expected.
  if [[ -n $PLUGIN && -f $PLUGIN && -f $EXAMPLE ]] && command -v clang-tidy-19 >/dev/null; then
    "$LINT" --no-cache --format=json --min-severity=note "$EXAMPLE" -- -std=c++17 "${inc[@]}" 2>/dev/null |
      python3 -c 'import json,sys; [print(x["rule"], x["line"], x["severity"]) for x in json.load(sys.stdin)]' |
      sort >"$tmp/scoped"
    clang-tidy-19 --load "$PLUGIN" --checks='-*,nosync-*' "$EXAMPLE" -- -std=c++17 "${inc[@]}" 2>/dev/null |
      sed -nE 's/^[^ ]*:([0-9]+):[0-9]+: (warning|remark): .*\[(nosync-[a-z0-9-]+)\]$/\3 \1 \2/p' |
      sed 's/ remark$/ note/' | sort >"$tmp/full"
    if [[ -s $tmp/full ]] && cmp -s "$tmp/scoped" "$tmp/full"; then ok "scoped-matching-same-as-clang-tidy ($(wc -l <"$tmp/full") findings)"
    else bad "scoped-matching-same-as-clang-tidy"; diff "$tmp/scoped" "$tmp/full" | head; fi
  else
    echo "SKIP scoped-matching-same-as-clang-tidy: needs clang-tidy-19 and the nosync-tidy plugin"; skip=$((skip+1))
  fi
else
  echo "SKIP parse-libtorch: LibTorch headers not found (run ./scripts/setup)"; skip=$((skip+1))
fi

# ------------------------------------------------------------ the tool, on the fake module
# A private copy of the project fixture: tests below edit files and configs.
P=$tmp/project
cp -r "$FIX/project" "$P"
FLAGS=(-- -std=c++17 "-I$P/site-packages" -isystem "$FIX/sysinc")
run_fake() { "$FAKE" --cache-dir="$tmp/cache" "$@"; }

expect text-warning 1 'step.cpp:9:15: warning: item\(\) waits for the GPU \[nosync-item\]' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
expect text-fixit-line 1 '^ +\| +item_on_device$' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
expect text-user-header-reported 1 'step_helpers.h:7:49: warning' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
expect text-remark-hidden-by-default 1 '1 low-severity finding hidden' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
if grep -q 'step.cpp:6:' "$tmp/out"; then bad "text-remark-not-printed"; else ok "text-remark-not-printed"; fi
expect text-min-severity-note 1 'step.cpp:6:44: remark: item\(\) in logging code' -- run_fake --min-severity=note "$P/step.cpp" "${FLAGS[@]}"
expect fail-on-error-exits-0 0 '2 warnings' -- run_fake --fail-on=error "$P/step.cpp" "${FLAGS[@]}"
expect no-colour-when-piped 1 '' -- run_fake --no-cache "$P/step.cpp" "${FLAGS[@]}"
if grep -q $'\e\[' "$tmp/out"; then bad "no-escape-codes-when-piped"; else ok "no-escape-codes-when-piped"; fi
expect colour-forced 1 $'\e\\[' -- run_fake --color "$P/step.cpp" "${FLAGS[@]}"
expect quiet-has-no-summary 1 'warning: item' -- run_fake --quiet "$P/step.cpp" "${FLAGS[@]}"
if grep -q '^nosync-lint: 1 file' "$tmp/out"; then bad "quiet-has-no-summary (summary printed)"; else ok "quiet-summary-absent"; fi

# JSON: exactly the expected findings (NOLINT, NOLINTNEXTLINE and NOLINTBEGIN/END
# lines 10, 12 and 14 suppressed; site-packages and -isystem headers filtered).
run_fake --format=json --min-severity=note "$P/step.cpp" "${FLAGS[@]}" >"$tmp/f.json" 2>/dev/null
json_assert json-findings "$tmp/f.json" \
  "sorted((x['file'].rsplit('/',1)[1], x['line'], x['severity']) for x in d) == [('step.cpp',6,'note'),('step.cpp',9,'warning'),('step_helpers.h',7,'warning')]"
json_assert json-schema-keys "$tmp/f.json" \
  "all(set(x) == {'file','line','column','rule','severity','message','context','fixes','notes'} and x['file'].startswith('/') for x in d)"
json_assert json-fix "$tmp/f.json" \
  "[f for x in d if x['line']==9 for f in x['fixes']] == [{'file': '$P/step.cpp', 'offset': open('$P/step.cpp').read().index('item();\n  float b'), 'length': 4, 'replacement': 'item_on_device'}]"
json_assert json-notes "$tmp/f.json" \
  "[(n['line'], n['column'], n['message']) for x in d if x['line']==9 for n in x['notes']] == [(9, 13, 'or defer the read')]"

# SARIF: the structure code scanning needs, checked key by key.
run_fake --format=sarif "$P/step.cpp" "${FLAGS[@]}" >"$tmp/f.sarif" 2>/dev/null
if python3 "$FIX/sarif_check.py" "$tmp/f.sarif" 2 "$RULES_DEF" >"$tmp/out" 2>&1; then ok "sarif-structure"; else bad "sarif-structure"; fi
json_assert sarif-relative-uri "$tmp/f.sarif" \
  "d['runs'][0]['results'][0]['locations'][0]['physicalLocation']['artifactLocation'] == {'uri': 'step.cpp', 'uriBaseId': '%SRCROOT%'}"

# Partial parse: the finding before the error is still reported, exit 3.
expect partial-parse-exit-3 3 'project_with_error.cpp:5:42: warning: item\(\) waits' -- run_fake "$FIX/project_with_error.cpp" -- -std=c++17

# ------------------------------------------------------------ config
cp "$P/.nosync.yaml" "$tmp/good.yaml"
printf 'Checks: nosync-*\nSeverity:\n  nosync-item: note\n' >"$P/.nosync.yaml"
expect config-severity-note 0 '0 warnings' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
printf 'Checks: "-*"\n' >"$P/.nosync.yaml"
expect config-checks-off 0 'no checks are enabled' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
printf 'Checks: nosync-*\nSeverty:\n  nosync-item: note\n' >"$P/.nosync.yaml"
expect config-unknown-key 2 "invalid config .*\.nosync\.yaml: unknown key 'Severty'" -- run_fake "$P/step.cpp" "${FLAGS[@]}"
expect_lines config-unknown-key-one-line 1
printf "Checks: 'nosync-*\\n" >"$P/.nosync.yaml"
expect config-malformed 2 'invalid config .*\.nosync\.yaml: line 1' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
expect_lines config-malformed-one-line 1
printf 'Severity:\n  nosync-itme: note\n' >"$P/.nosync.yaml"
expect config-unknown-rule 2 "unknown rule 'nosync-itme'" -- run_fake "$P/step.cpp" "${FLAGS[@]}"
# A .clang-tidy with nosync settings is read when there is no .nosync.yaml.
rm "$P/.nosync.yaml"
printf 'Checks: "-*,nosync-*"\nCheckOptions:\n  nosync-item.Severity: error\n' >"$P/.clang-tidy"
expect clang-tidy-section 1 'step.cpp:9:15: error: item\(\) waits' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
# The project's .clang-tidy may be written for another clang-tidy: a top-level
# key LLVM 19 does not know is skipped with a warning; broken YAML is an error.
printf 'Checks: "-*,nosync-*"\nAnalyzeTemporaryDtors: false\nNosync:\n  a: 1\n' >"$P/.clang-tidy"
expect clang-tidy-unknown-key-skipped 1 "warning: .*\.clang-tidy: line 2: unknown key 'AnalyzeTemporaryDtors'; ignored" -- run_fake "$P/step.cpp" "${FLAGS[@]}"
expect clang-tidy-unknown-key-read-on 1 "unknown key 'Nosync'; ignored" -- run_fake "$P/step.cpp" "${FLAGS[@]}"
printf 'Checks: "-*,nosync-*"\nCheckOptions: [\n' >"$P/.clang-tidy"
expect clang-tidy-malformed 2 "invalid config .*\.clang-tidy: line" -- run_fake "$P/step.cpp" "${FLAGS[@]}"
# A broken .clang-tidy that configures no nosync check is the project's own
# (pytorch/TensorRT's empty `CheckOptions:`): skipped with a warning.
printf 'Checks: "-*,performance-*"\nCheckOptions:\n...\n' >"$P/.clang-tidy"
expect clang-tidy-foreign-malformed-skipped 1 "warning: invalid config .*\.clang-tidy: line [0-9]+: .*; ignored \(it configures no nosync check\)" -- run_fake "$P/step.cpp" "${FLAGS[@]}"
rm "$P/.clang-tidy"; cp "$tmp/good.yaml" "$P/.nosync.yaml"
expect checks-flag-disables 0 '' -- run_fake --checks=-nosync-item "$P/step.cpp" "${FLAGS[@]}"

# ------------------------------------------------------------ fixes
cp -r "$P" "$tmp/fixme"
"$FAKE" --no-cache --export-fixes="$tmp/fixes.yaml" "$tmp/fixme/step.cpp" -- -std=c++17 "-I$tmp/fixme/site-packages" -isystem "$FIX/sysinc" >/dev/null 2>&1
if grep -q 'DiagnosticName: *nosync-item' "$tmp/fixes.yaml" && grep -q "ReplacementText: *item_on_device" "$tmp/fixes.yaml"
then ok "export-fixes-yaml"; else bad "export-fixes-yaml"; fi
expect fix-applies 1 'applied the fixes of 2 findings to 2 files' -- \
  "$FAKE" --no-cache --fix "$tmp/fixme/step.cpp" -- -std=c++17 "-I$tmp/fixme/site-packages" -isystem "$FIX/sysinc"
if grep -q 'float a = t.item_on_device();' "$tmp/fixme/step.cpp" && grep -q 'return t.item_on_device();' "$tmp/fixme/step_helpers.h" \
   && ! grep -q 'deferred' "$tmp/fixme/step.cpp" && grep -q 'float b = t.item();  // NOLINT' "$tmp/fixme/step.cpp"
then ok "fix-content (finding fixes applied, note fixes and NOLINT lines untouched)"; else bad "fix-content"; fi
expect fix-result-is-clean 0 '0 warnings' -- \
  "$FAKE" --no-cache "$tmp/fixme/step.cpp" -- -std=c++17 "-I$tmp/fixme/site-packages" -isystem "$FIX/sysinc"
if command -v clang-apply-replacements-19 >/dev/null; then
  cp -r "$P" "$tmp/car"; mkdir "$tmp/car-fixes"
  sed "s|$P|$tmp/car|g" "$tmp/fixes.yaml" | sed "s|$tmp/fixme|$tmp/car|g" >"$tmp/car-fixes/fixes.yaml"
  clang-apply-replacements-19 "$tmp/car-fixes" >"$tmp/out" 2>&1
  if cmp -s "$tmp/car/step.cpp" "$tmp/fixme/step.cpp"; then ok "export-fixes-applies-like-fix"; else bad "export-fixes-applies-like-fix"; fi
else
  echo "SKIP export-fixes-applies-like-fix: clang-apply-replacements-19 not installed"; skip=$((skip+1))
fi

# ------------------------------------------------------------ cache
rm -rf "$tmp/cache"
expect cache-miss 1 '1 file: ' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
expect cache-hit 1 '1 file \(1 from cache\)' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
if [[ $(cat "$tmp/cache/.gitignore" 2>/dev/null | tail -1) == '*' ]]; then ok "cache-dir-gitignored"; else bad "cache-dir-gitignored"; fi
expect cache-hit-same-output 1 'step.cpp:9:15: warning' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
printf '\n' >>"$P/step_helpers.h"
expect cache-header-edit-misses 1 '1 file: ' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
printf '// edited\n' >>"$P/step.cpp"
expect cache-main-edit-misses 1 '1 file: ' -- run_fake "$P/step.cpp" "${FLAGS[@]}"
expect cache-flags-miss 1 '1 file: ' -- run_fake "$P/step.cpp" "${FLAGS[@]}" -DSOMETHING
expect cache-no-cache 1 '1 file: ' -- run_fake --no-cache "$P/step.cpp" "${FLAGS[@]}"

# ------------------------------------------------------------ compile databases, -j
mkdir -p "$tmp/db/src/build"
cp "$P/step.cpp" "$P/step_helpers.h" "$tmp/db/src/"; cp -r "$P/site-packages" "$tmp/db/src/"
cp "$tmp/db/src/step.cpp" "$tmp/db/src/other.cpp"
cat >"$tmp/db/src/build/compile_commands.json" <<JSON
[{"directory": "$tmp/db/src/build", "file": "../step.cpp", "command": "c++ -std=c++17 -I../site-packages -isystem $FIX/sysinc -c ../step.cpp"},
 {"directory": "$tmp/db/src/build", "file": "../other.cpp", "command": "c++ -std=c++17 -I../site-packages -isystem $FIX/sysinc -c ../other.cpp"}]
JSON
expect db-discovered-in-build-dir 1 'step.cpp:9:15: warning' -- run_fake --no-cache "$tmp/db/src/step.cpp"
expect db-explicit-p 1 'step.cpp:9:15: warning' -- run_fake --no-cache -p "$tmp/db/src/build" "$tmp/db/src/step.cpp"
expect parallel-j2 1 '\[2/2\]' -- run_fake --no-cache -j 2 "$tmp/db/src/step.cpp" "$tmp/db/src/other.cpp"
if grep -q 'other.cpp:9:15: warning' "$tmp/out" && grep -q 'src/step.cpp:9:15: warning' "$tmp/out"; then ok "parallel-j2-both-reported"; else bad "parallel-j2-both-reported"; fi
if [[ $(grep -c 'step_helpers.h:7:49: warning' "$tmp/out") -eq 1 ]]; then ok "shared-header-reported-once"; else bad "shared-header-reported-once"; fi
echo '[{"directory": ' >"$tmp/db/src/build/compile_commands.json"
expect db-broken 2 'cannot read .*compile_commands.json' -- run_fake --no-cache "$tmp/db/src/step.cpp"
expect_lines db-broken-one-line 1
rm -r "$tmp/db/src/build"
mkdir -p "$tmp/nodb"; cp "$P/step.cpp" "$tmp/nodb/"
expect db-absent 2 'no compile_commands.json found for .*step.cpp' -- run_fake --no-cache "$tmp/nodb/step.cpp"
expect_lines db-absent-one-line 1
# Without any database, a .nosync.yaml's CompileFlags (paths relative to it) are used.
cp -r "$P/site-packages" "$P/step_helpers.h" "$tmp/nodb/"
printf 'CompileFlags: [-std=c++17, -Isite-packages, -isystem, %s]\n' "$FIX/sysinc" >"$tmp/nodb/.nosync.yaml"
expect db-config-compile-flags 1 'step.cpp:9:15: warning' -- run_fake --no-cache "$tmp/nodb/step.cpp"
printf 'CompileFlags: {std: c++17}\n' >"$tmp/nodb/.nosync.yaml"
expect db-config-compile-flags-bad 2 "'CompileFlags' must be a list of arguments or a string" -- run_fake --no-cache "$tmp/nodb/step.cpp"
rm "$tmp/nodb/.nosync.yaml"
expect db-p-not-a-dir 2 "-p: '$tmp/nope' is not a directory" -- run_fake -p "$tmp/nope" "$tmp/nodb/step.cpp"

echo "lint.cli: $pass passed, $fail failed, $skip skipped"
[[ $fail -eq 0 ]]
