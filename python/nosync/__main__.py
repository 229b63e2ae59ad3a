"""python -m nosync run [options] [--] train.py [args...]

Runs a Python script (or, like nosync-run, any program) under the nosync
sanitizer: sets CUDA_INJECTION64_PATH to the package's libnosync_sanitizer.so
and folds the flags into NOSYNC_OPTIONS (flags win over options set there).

  --mode warn|error|report   --format text|json|trace   --log PATH
  --suppressions FILE        --min-stall-us N           --options 'k=v:k=v'

`train.py ...`, `-m package.module ...` and `-c code` run with this Python;
anything else is executed as given (`python -m nosync run -- ./train_cpp`).
"""
import os
import sys

from . import _libs

FLAGS = {"--mode": "mode", "--format": "format", "--log": "log_path", "--suppressions": "suppressions",
         "--min-stall-us": "min_stall_us"}


def usage(code=2):
    sys.stderr.write(__doc__)
    return code


def run(argv):
    opts = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a in ("-h", "--help"):
            return usage(0)
        if a in FLAGS or a == "--options":
            if i + 1 >= len(argv):
                return usage()
            opts.append(argv[i + 1] if a == "--options" else "%s=%s" % (FLAGS[a], argv[i + 1]))
            i += 2
            continue
        if a.startswith("--") and a not in FLAGS:
            sys.stderr.write("python -m nosync run: unknown flag %s\n" % a)
            return usage()
        break
    program = argv[i:]
    if not program:
        return usage()
    lib = _libs.sanitizer_path()
    if not lib:
        sys.stderr.write("python -m nosync run: libnosync_sanitizer.so not found (set NOSYNC_SANITIZER_LIB)\n")
        return 2
    env = dict(os.environ)
    joined = ":".join(opts)
    env["NOSYNC_OPTIONS"] = ":".join(filter(None, [env.get("NOSYNC_OPTIONS", ""), joined]))
    # Absolute: the driver opens it at cuInit, possibly after a chdir.
    env["CUDA_INJECTION64_PATH"] = os.path.realpath(lib)
    # libcupti from the environment's nvidia wheels, in case the build found it elsewhere.
    dirs = _libs.cupti_dirs()
    if dirs:
        env["LD_LIBRARY_PATH"] = ":".join(dirs + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    first = program[0]
    if first.endswith(".py") or first in ("-m", "-c"):
        program = [sys.executable] + program
    try:
        os.execvpe(program[0], program, env)
    except OSError as e:
        sys.stderr.write("python -m nosync run: cannot run %s: %s\n" % (program[0], e))
        return 127


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        return usage(0 if argv else 2)
    if argv[0] == "run":
        return run(argv[1:])
    sys.stderr.write("python -m nosync: unknown command %r (commands: run)\n" % argv[0])
    return 2


if __name__ == "__main__":
    sys.exit(main())
