"""What the GPU test drivers share: named checks that print ok/FAIL and add up
to one exit status, the "// LINE:<name>" markers of the programs they run, and
the environment a launcher gives each rank."""
import os

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


def rank_env(rank, world, **extra):
    """The environment torchrun gives rank `rank` of `world`, plus `extra`; the
    caller's NOSYNC_OPTIONS removed so that only the command line configures the sanitizer."""
    env = dict(os.environ)
    env.pop("NOSYNC_OPTIONS", None)
    env.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world)})
    env.update({k: str(v) for k, v in extra.items()})
    return env
