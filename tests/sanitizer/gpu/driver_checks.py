"""What the GPU test drivers share: named checks that print ok/FAIL and add up
to one exit status, the "// LINE:<name>" markers of the programs they run, and
and the launch of a job's ranks under nosync-run."""
import os
import subprocess

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def finish():
    """The exit status: 1, listing every failed check, or 0."""
    if failures:
        print("\n%d check(s) failed:\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    print("\nall checks passed")
    return 0


def marker_line(source, name):
    with open(source) as f:
        for i, line in enumerate(f, 1):
            if "// LINE:" + name in line:
                return i
    raise SystemExit("marker LINE:%s not in %s" % (name, source))


def run_ranks(nosync_run, log, argv, world, timeout, **extra_env):
    """Starts `argv` once per rank, all at once, each under nosync-run with a JSON
    log at `log`, with the environment torchrun gives a rank plus `extra_env` (the
    caller's NOSYNC_OPTIONS removed: only the command line configures the
    sanitizer). Waits for all, killing any still running after `timeout` s, and
    prints each exit with its output's tail. Returns [(process, stdout)] by rank."""
    procs = []
    for rank in range(world):
        env = dict(os.environ)
        env.pop("NOSYNC_OPTIONS", None)
        env.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world)})
        env.update({k: str(v) for k, v in extra_env.items()})
        cmd = [nosync_run, "--mode", "report", "--format", "json", "--log", log, "--"] + list(argv)
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for rank, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        print("rank %d (pid %d) -> rc %d\n  stdout: %s\n  stderr: %s"
              % (rank, p.pid, p.returncode, out.strip()[-800:], err.strip()[-1500:]), flush=True)
        results.append((p, out))
    return results
