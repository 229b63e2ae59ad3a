"""The Python package as a user installs it: `pip install --no-build-isolation`
from the repository into a temporary prefix of the environment that has
torch, then import it from there and use it (CPU: the kernels' CPU path, the
launcher, the sync-free region's refusal to pass unchecked without a GPU,
the pytest plugin when pytest is installed). Every failed check is listed;
exit 1 if any failed.

    python3 pip_install_test.py --python VENV/bin/python --build-dir BUILD
"""
import argparse
import os
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, help="a Python whose environment has torch")
    ap.add_argument("--build-dir", help="reuse this configured CMake tree (NOSYNC_BUILD_DIR)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="nosync_pip_")
    site = os.path.join(tmp, "site")
    env = dict(os.environ)
    env.pop("NOSYNC_OPTIONS", None)
    env.pop("CUDA_INJECTION64_PATH", None)
    if args.build_dir:
        env["NOSYNC_BUILD_DIR"] = args.build_dir
    # The pip cache and the build tree stay out of the user's home and the repo's build/.
    env["PIP_NO_CACHE_DIR"] = "1"
    if subprocess.run([args.python, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        print("[  SKIPPED ] no pip in the environment of %s (a venv made by uv?)" % args.python)
        return 0
    cmd = [args.python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
           "--target", site, ROOT]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp, timeout=3000)
    check(p.returncode == 0, "pip install --no-build-isolation from the repository (rc %d)" % p.returncode)
    if p.returncode != 0:
        print(p.stdout[-3000:] + p.stderr[-5000:])
        return 1
    lib = os.path.join(site, "nosync", "lib")
    check(os.path.exists(os.path.join(lib, "libnosync_sanitizer.so")), "nosync/lib/libnosync_sanitizer.so installed")
    has_kernels = os.path.exists(os.path.join(lib, "libnosync_kernels.so"))
    check(has_kernels, "nosync/lib/libnosync_kernels.so installed")
    check(any(n.startswith("nosync-") and n.endswith(".dist-info") for n in os.listdir(site)), "dist-info installed")

    run_env = dict(env)
    run_env["PYTHONPATH"] = site
    run_env.pop("NOSYNC_BUILD_DIR", None)

    def py(code, *extra, timeout=300):
        return subprocess.run([args.python] + list(extra) + ["-c", textwrap.dedent(code)], env=run_env,
                              capture_output=True, text=True, cwd=tmp, timeout=timeout)

    p = py("""
        import nosync, os
        print("file", nosync.__file__)
        print("version", nosync.__version__)
    """)
    check(p.returncode == 0 and ("file " + os.path.join(site, "nosync")) in p.stdout,
          "import nosync from the install, not the source tree (%s)" % (p.stdout.strip() or p.stderr[-800:]))

    if has_kernels:
        p = py("""
            import torch, nosync.kernels as k
            torch.manual_seed(0)
            ts = [torch.randn(n) for n in (1, 7, 1000, 4099)]
            ref = sum(t.double().sum() for t in ts)
            assert abs(k.sum(ts).item() - ref.item()) < 1e-3 * max(1, abs(ref.item())), (k.sum(ts), ref)
            assert torch.allclose(k.sum_per_tensor(ts), torch.stack([t.sum() for t in ts]), rtol=1e-5, atol=1e-5)
            assert torch.allclose(k.l2_norm(ts), torch.cat(ts).norm(), rtol=1e-5)
            assert k.nonfinite_flag(ts).item() == 0
            assert k.nonfinite_flag(ts + [torch.tensor([float("nan")])]).item() != 0
            ps = [torch.nn.Parameter(torch.randn(n)) for n in (10, 300)]
            qs = [torch.nn.Parameter(p.detach().clone()) for p in ps]
            for p, q in zip(ps, qs):
                p.grad = torch.randn_like(p) * 10
                q.grad = p.grad.clone()
            n1 = k.clip_grad_norm_(ps, 1.0)
            n2 = torch.nn.utils.clip_grad_norm_(qs, 1.0)
            assert torch.allclose(n1, n2, rtol=1e-5), (n1, n2)
            assert all(torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-6) for p, q in zip(ps, qs))
            m = k.MetricAccumulator("cpu")
            m.add("loss", torch.tensor(2.0)); m.add("loss", torch.tensor(4.0))
            assert abs(m.read()["loss"] - 3.0) < 1e-6, m.read()
            print("kernels ok")
        """)
        check(p.returncode == 0 and "kernels ok" in p.stdout,
              "nosync.kernels on CPU tensors: sum, sum_per_tensor, l2_norm, nonfinite_flag, clip_grad_norm_ "
              "(= torch), MetricAccumulator (%s)" % (p.stdout.strip() or p.stderr[-1500:]))

    # python -m nosync run: sets the injection and options, runs the script.
    script = os.path.join(tmp, "show_env.py")
    with open(script, "w") as f:
        f.write("import os, sys\nprint('inj=' + os.environ.get('CUDA_INJECTION64_PATH', ''))\n"
                "print('opts=' + os.environ.get('NOSYNC_OPTIONS', ''))\nprint('args=' + ' '.join(sys.argv[1:]))\n")
    p = subprocess.run([args.python, "-m", "nosync", "run", "--mode", "report", "--format", "json", "--log",
                        os.path.join(tmp, "log"), script, "--steps", "3"], env=run_env, capture_output=True,
                       text=True, cwd=tmp, timeout=120)
    check(p.returncode == 0 and "inj=" + os.path.realpath(os.path.join(lib, "libnosync_sanitizer.so")) in p.stdout,
          "python -m nosync run sets CUDA_INJECTION64_PATH to the installed library (%s)" % p.stdout.strip())
    check("opts=mode=report:format=json:log_path=" + os.path.join(tmp, "log") in p.stdout,
          "... folds the flags into NOSYNC_OPTIONS")
    check("args=--steps 3" in p.stdout, "... and passes the script its arguments")
    p = subprocess.run([args.python, "-m", "nosync", "run", "--bogus", "x.py"], env=run_env, capture_output=True,
                       text=True, cwd=tmp)
    check(p.returncode == 2 and "unknown flag --bogus" in p.stderr, "an unknown flag is an error")

    # A torch program under the launcher on this machine: with a GPU it is
    # watched, without one the sanitizer is never started by CUDA and the
    # program runs unharmed either way.
    p = subprocess.run([args.python, "-m", "nosync", "run", "--mode", "report", "-c",
                        "import torch; print('sum', torch.ones(3).sum().item())"], env=run_env,
                       capture_output=True, text=True, cwd=tmp, timeout=300)
    check(p.returncode == 0 and "sum 3.0" in p.stdout, "a torch program runs under python -m nosync run (%s)" %
          (p.stdout.strip() or p.stderr[-800:]))

    # The sync-free region and report() through the installed library.
    p = py("""
        import torch, nosync
        if torch.cuda.is_available():
            x = torch.ones(8, device="cuda"); x.sum().item()
            try:
                with nosync.sync_free("step"):
                    x.sum().item()
                print("no error")
            except nosync.HostSyncError as e:
                print("HostSyncError:", e)
            print("findings", [str(f) for f in nosync.report()])
        else:
            try:
                with nosync.sync_free("step"):
                    pass
                print("passed unchecked")
            except nosync.SanitizerUnavailable as e:
                print("SanitizerUnavailable:", e)
            with nosync.sync_free("step", strict=False):
                pass
            print("non-strict ok; report", nosync.report())
    """)
    out = p.stdout
    ok = (("HostSyncError:" in out and "nosync-item at <string>:7" in out) or
          ("SanitizerUnavailable:" in out and "non-strict ok; report []" in out))
    check(p.returncode == 0 and ok, "sync_free(): names <string>:7 and nosync-item with a GPU; without one refuses to "
          "pass unchecked, strict=False passes (%s)" % (out.strip() or p.stderr[-1500:]))

    # The pytest plugin, when pytest is installed in this environment.
    if subprocess.run([args.python, "-c", "import pytest"], capture_output=True).returncode != 0:
        print("note  pytest is not installed in this environment: the plugin was not exercised")
    else:
        test = os.path.join(tmp, "test_step.py")
        with open(test, "w") as f:
            f.write(textwrap.dedent("""
                import pytest, torch

                def test_clean(no_host_sync):
                    x = torch.ones(8, device="cuda"); y = x * 2
                    with no_host_sync():
                        y = x * 3

                def test_syncs(no_host_sync):
                    x = torch.ones(8, device="cuda"); x.sum().item()
                    with no_host_sync():
                        x.sum().item()

                @pytest.mark.sync_free
                def test_marked_syncs():
                    torch.ones(8, device="cuda").sum().item()
            """))
        p = subprocess.run([args.python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", test], env=run_env,
                           capture_output=True, text=True, cwd=tmp, timeout=600)
        gpu = "3 skipped" not in p.stdout
        if gpu:
            check("1 passed" in p.stdout and "2 failed" in p.stdout and "test_step.py:12" in p.stdout,
                  "pytest: the clean step passes, both syncing tests fail naming test_step.py:12 (%s)" %
                  p.stdout[-2500:])
        else:
            check("3 skipped" in p.stdout and "no CUDA device" in p.stdout,
                  "pytest: without a GPU the three tests skip visibly (%s)" % p.stdout[-800:])
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
