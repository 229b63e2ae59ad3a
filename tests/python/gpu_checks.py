"""GPU suite of the Python package: installs it with pip (from this build
tree) into a temporary prefix, then runs with that `nosync` importable:

  compare   examples/compare_sync_reports.py --check (planted syncs at their
            exact lines, torch's mode finds nothing nosync misses, the fixed
            twin's sync-free steps, DataLoader workers); the table goes to
            $NOSYNC_RESULTS_DIR/python-compare.md
  lines     python_lines_gpu.py (threads, a GIL held elsewhere)
  bench     bench_overhead.py (label benchmark)

    python3 gpu_checks.py --python PY --build-dir BUILD compare lines
Prints "[  SKIPPED ]" without a GPU.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("what", nargs="+", choices=["compare", "lines", "bench"])
    args = ap.parse_args()
    probe = subprocess.run([args.python, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    if probe.stdout.strip() != "True":
        print("[  SKIPPED ] no CUDA GPU (%s)" % (probe.stdout.strip() or probe.stderr[-300:]))
        return 0
    site = os.path.join(tempfile.mkdtemp(prefix="nosync_gpu_py_"), "site")
    env = dict(os.environ, NOSYNC_BUILD_DIR=args.build_dir, PIP_NO_CACHE_DIR="1")
    env.pop("NOSYNC_OPTIONS", None)
    env.pop("CUDA_INJECTION64_PATH", None)
    if subprocess.run([args.python, "-m", "pip", "--version"], capture_output=True).returncode == 0:
        p = subprocess.run([args.python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                            "--target", site, ROOT], env=env, capture_output=True, text=True, timeout=3000)
    else:
        # A venv made without pip (uv): build the same wheel with the same
        # backend and unpack it, which is all pip does with this wheel.
        print("note  no pip in this environment: wheel built by python/nosync_build.py and unpacked", flush=True)
        code = ("import sys, zipfile, tempfile; sys.path.insert(0, %r); import nosync_build; d = tempfile.mkdtemp(); "
                "w = nosync_build.build_wheel(d); zipfile.ZipFile(d + '/' + w).extractall(%r)" %
                (os.path.join(ROOT, "python"), site))
        p = subprocess.run([args.python, "-c", code], env=env, capture_output=True, text=True, timeout=3000, cwd=ROOT)
    if p.returncode != 0:
        print("FAIL  pip install:\n" + p.stdout[-2000:] + p.stderr[-4000:])
        return 1
    env = dict(os.environ, PYTHONPATH=site)
    env.pop("NOSYNC_OPTIONS", None)
    env.pop("NOSYNC_BUILD_DIR", None)
    results = os.environ.get("NOSYNC_RESULTS_DIR")
    rc = 0
    for what in args.what:
        if what == "compare":
            cmd = [args.python, os.path.join(ROOT, "examples", "compare_sync_reports.py"), "--check", "--steps", "20"]
            if results:
                cmd += ["--out", os.path.join(results, "python-compare.md")]
        elif what == "lines":
            cmd = [args.python, os.path.join(HERE, "python_lines_gpu.py")]
        else:
            cmd = [args.python, os.path.join(HERE, "bench_overhead.py")]
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, env=env, timeout=900)
        print("%s -> rc %d" % (what, p.returncode), flush=True)
        rc |= p.returncode != 0
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
