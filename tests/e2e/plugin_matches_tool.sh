#!/usr/bin/env bash
# usage: plugin_matches_tool.sh <nosync-lint> <libnosync-tidy.so> <clang-tidy> <source> -- <compile flags...>
# The same checks loaded into the user's own clang-tidy 19 (--load) must give
# the same warnings, at the same line:column with the same rule, as nosync-lint.
set -uo pipefail
LINT=$1 PLUGIN=$2 TIDY=$3 SRC=$4; shift 5
command -v "$TIDY" >/dev/null || { echo "SKIPPED: $TIDY not installed (apt-get install clang-tidy-19)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$LINT" --no-cache --format=json "$SRC" -- "$@" > "$tmp/lint.json" 2> "$tmp/lint.err"
rc=$?; [[ $rc -le 1 ]] || { cat "$tmp/lint.err"; echo "FAIL nosync-lint exited $rc"; exit 1; }
"$TIDY" --load "$PLUGIN" --checks='-*,nosync-*' "$SRC" -- "$@" > "$tmp/tidy.txt" 2> "$tmp/tidy.err"
python3 - "$tmp/lint.json" "$tmp/tidy.txt" "$SRC" <<'PY'
import json, os, re, sys
lint_json, tidy_txt, src = sys.argv[1:]
name = os.path.realpath(src)
lint = {(f["line"], f["column"], f["rule"]) for f in json.load(open(lint_json))
        if f["severity"] == "warning" and os.path.realpath(f["file"]) == name}
pat = re.compile(r"^(.*?):(\d+):(\d+): warning: .*\[(nosync-[a-z0-9-]+)\]$")
tidy = {(int(m[2]), int(m[3]), m[4]) for m in map(pat.match, open(tidy_txt).read().splitlines())
        if m and os.path.realpath(m[1]) == name}
for label, items in (("only nosync-lint", lint - tidy), ("only clang-tidy --load", tidy - lint)):
    for line, col, rule in sorted(items):
        print(f"FAIL {label}: {line}:{col} [{rule}]")
ok = lint == tidy and len(lint) > 0
print(f"{'ok  ' if ok else 'FAIL'} {len(lint)} warnings from nosync-lint, {len(tidy)} from clang-tidy --load")
print(f"{int(ok)} passed, {int(not ok)} failed")
sys.exit(0 if ok else 1)
PY
