#!/usr/bin/env bash
# usage: precommit_hook.sh <nosync-lint> <pre-commit> <nosync source tree> <torch include dirs, ':'-separated>
# Installs this repository's hook with the real pre-commit into a temporary
# git repository with no compile_commands.json (flags come from .nosync.yaml),
# then checks that a commit of a file with a host sync in a loop is refused
# with the finding and a commit of a clean file goes through.
set -uo pipefail
LINT=$1 PRECOMMIT=$2 SRC=$3 TORCH_INC=$4
if [[ ! -x "$PRECOMMIT" ]]; then echo "SKIPPED: pre-commit not installed (run ./scripts/setup)"; exit 77; fi
rev=$(git -C "$SRC" rev-parse HEAD 2>/dev/null) \
  || { echo "SKIPPED: $SRC is not a git checkout, so pre-commit cannot fetch the hook from it"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export PRE_COMMIT_HOME="$tmp/pre-commit-cache" PATH="$(dirname "$LINT"):$PATH"
pass=0 fail=0
check() { if eval "$2"; then echo "ok   $1"; pass=$((pass+1)); else echo "FAIL $1"; sed 's/^/    /' "$tmp/out" | tail -25; fail=$((fail+1)); fi; }

mkdir "$tmp/proj" && cd "$tmp/proj" && git init -q && git config user.email ci@example.invalid && git config user.name ci
{
  echo "CompileFlags:"
  echo "  - -std=c++17"
  IFS=: read -ra dirs <<<"$TORCH_INC"; for d in "${dirs[@]}"; do echo "  - -isystem"; echo "  - $d"; done
} > .nosync.yaml
cat > .pre-commit-config.yaml <<YAML
repos:
  - repo: $SRC
    rev: $rev
    hooks:
      - id: nosync-lint
YAML
cat > bad.cpp <<'CPP'
#include <torch/torch.h>
double total_loss(const std::vector<torch::Tensor>& losses) {
  double total = 0;
  for (const auto& l : losses) total += l.item<double>();
  return total;
}
CPP
cat > clean.cpp <<'CPP'
#include <torch/torch.h>
torch::Tensor total_loss(const std::vector<torch::Tensor>& losses) {
  return torch::stack(losses).sum();
}
CPP
git add .nosync.yaml .pre-commit-config.yaml && git commit -qm config --no-verify
"$PRECOMMIT" install > "$tmp/out" 2>&1
check "pre-commit install" '[[ $? -eq 0 ]]'

git add bad.cpp
git commit -m bad > "$tmp/out" 2>&1; rc=$?
check "commit of bad.cpp is refused (exit $rc)" '[[ $rc -ne 0 ]]'
check "the refusal names the finding at bad.cpp:4 [nosync-item]" 'grep -Eq "bad.cpp:4:[0-9]+: warning: .*\[nosync-item\]" "$tmp/out"'
git reset -q bad.cpp

git add clean.cpp
git commit -m clean > "$tmp/out" 2>&1; rc=$?
check "commit of clean.cpp goes through (exit $rc)" '[[ $rc -eq 0 ]]'

echo "e2e.precommit_hook: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
