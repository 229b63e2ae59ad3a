"""nosync for Python training scripts.

    python -m nosync run train.py ...          # the sanitizer over a whole run (as nosync-run)

    import nosync
    with nosync.sync_free():                    # raises nosync.HostSyncError naming the .py line and rule
        step()
    nosync.report()                             # the findings so far, one per (rule, .py line)
    nosync.kernels.clip_grad_norm_(model.parameters(), 1.0)   # torch.ops.nosync.*

pytest: the fixture `no_host_sync` and the marker `@pytest.mark.sync_free`
(nosync.pytest_plugin, registered on install).
"""
from ._sanitizer import (  # noqa: F401
    Finding,
    HostSyncError,
    SanitizerUnavailable,
    active,
    counters,
    findings,
    pause,
    report,
    reset,
    resume,
    start,
    sync_free,
    write_report,
)

__version__ = "0.1.0"


def __getattr__(name):
    # The kernels need torch; import them only when asked for.
    if name == "kernels":
        import importlib

        return importlib.import_module(".kernels", __name__)
    raise AttributeError("module 'nosync' has no attribute %r" % name)
