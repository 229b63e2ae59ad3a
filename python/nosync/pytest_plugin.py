"""pytest support, registered through the `pytest11` entry point on install:

    def test_step_is_sync_free(no_host_sync):
        step()                      # warm-up: allocator, cuBLAS handles
        with no_host_sync():
            step()                  # fails the test, naming the .py line and rule, if this blocks the host

    @pytest.mark.sync_free          # the whole test body must not block the host
    def test_eval_step(): ...

Without a CUDA device the fixture and the marker skip the test (visibly: a
sync needs a GPU); with one, a sanitizer that cannot watch (CUPTI held by a
profiler) fails the test rather than passing it unchecked.
"""
import contextlib

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "sync_free: fail the test if its body blocks the host on the GPU (nosync)")


def _cuda_or_skip():
    try:
        import torch
    except ImportError:
        pytest.skip("nosync: torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("nosync: no CUDA device, host syncs cannot happen or be observed")


def _checked(name):
    from . import _sanitizer

    @contextlib.contextmanager
    def region():
        try:
            with _sanitizer.sync_free(name):
                yield
        except _sanitizer.HostSyncError as e:
            pytest.fail(str(e), pytrace=False)
        except _sanitizer.SanitizerUnavailable as e:
            pytest.fail(str(e), pytrace=False)

    return region()


@pytest.fixture
def no_host_sync(request):
    """A context-manager factory: `with no_host_sync(): step()` fails the test if step() syncs."""
    _cuda_or_skip()
    return lambda name=None: _checked(name or request.node.name)


def _end_region(token, name):
    import ctypes

    from . import _sanitizer

    stall = ctypes.c_uint64(0)
    text = ctypes.create_string_buffer(8192)
    n = _sanitizer._lib().nosync_sanitizer_region_end(token, ctypes.byref(stall), text, len(text))
    if not n:
        return None
    return "%s: %d host sync%s (%.0f us host stalled):\n%s" % (
        name, n, "" if n == 1 else "s", stall.value / 1e3, text.value.decode(errors="replace").rstrip())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if item.get_closest_marker("sync_free") is None:
        return (yield)
    _cuda_or_skip()
    from . import _sanitizer

    if not _sanitizer.start():
        pytest.fail("nosync: the sanitizer is not active in this process, the test cannot be checked", pytrace=False)
    token = _sanitizer._lib().nosync_sanitizer_region_begin()
    try:
        result = yield
    except BaseException:
        _end_region(token, item.name)  # the test's own failure is the one to report
        raise
    message = _end_region(token, item.name)
    if message:
        pytest.fail(message, pytrace=False)
    return result
