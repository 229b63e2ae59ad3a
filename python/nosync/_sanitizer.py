"""The sanitizer's C API (nosync/sanitizer.h) through ctypes.

ctypes.CDLL releases the GIL around each call, so nothing here can block a
CUDA callback that runs on another thread."""
import contextlib
import ctypes
import os
import threading
from typing import Dict, List, NamedTuple

from . import _libs


class HostSyncError(RuntimeError):
    """A sync-free region blocked the host. `syncs` and `stall_us` say how
    much; the message names each site: rule, .py file:line, op and CUDA API."""

    def __init__(self, message, syncs=0, stall_us=0.0):
        super().__init__(message)
        self.syncs = syncs
        self.stall_us = stall_us


class SanitizerUnavailable(RuntimeError):
    """The sanitizer cannot watch this process (no GPU or driver, CUPTI held by
    a profiler), so the absence of host syncs cannot be checked."""


class Finding(NamedTuple):
    rule: str
    file: str
    line: int
    function: str
    op: str
    apis: Dict[str, int]
    count: int
    total_stall_us: float
    max_stall_us: float

    def __str__(self):
        where = "%s:%d" % (self.file, self.line) if self.file else self.function
        return "%s at %s (%s; %d call%s, %.1f us stalled)" % (
            self.rule, where, self.op or "a CUDA call", self.count, "" if self.count == 1 else "s",
            self.total_stall_us)


class _CFinding(ctypes.Structure):
    _fields_ = [("rule", ctypes.c_char * 48), ("file", ctypes.c_char * 512), ("line", ctypes.c_int),
                ("function", ctypes.c_char * 256), ("op", ctypes.c_char * 96), ("apis", ctypes.c_char * 256),
                ("count", ctypes.c_uint64), ("total_stall_ns", ctypes.c_uint64), ("max_stall_ns", ctypes.c_uint64)]


class _CCounters(ctypes.Structure):
    _fields_ = [("intercepted", ctypes.c_uint64), ("blocking", ctypes.c_uint64), ("blocking_ns", ctypes.c_uint64),
                ("below_threshold", ctypes.c_uint64), ("queries", ctypes.c_uint64)]


_lock = threading.Lock()
_dll = None


def _lib():
    global _dll
    with _lock:
        if _dll is None:
            path = _libs.sanitizer_path()
            if not path:
                raise SanitizerUnavailable("libnosync_sanitizer.so not found: install nosync with pip, or set "
                                           "NOSYNC_SANITIZER_LIB")
            dll = ctypes.CDLL(path)
            dll.nosync_sanitizer_findings.restype = ctypes.c_size_t
            dll.nosync_sanitizer_findings.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            dll.nosync_sanitizer_region_begin.restype = ctypes.c_uint64
            dll.nosync_sanitizer_region_end.restype = ctypes.c_uint64
            dll.nosync_sanitizer_region_end.argtypes = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64),
                                                        ctypes.c_char_p, ctypes.c_size_t]
            _dll = dll
        return _dll


def start():
    """Starts watching this process if nothing did yet (python -m nosync run
    and CUDA_INJECTION64_PATH start it at CUDA's initialisation). Started
    from here, the default mode is `report`: findings come from report() and
    sync_free(), nothing is printed before exit. Returns True when active."""
    lib = _lib()
    if not lib.nosync_sanitizer_active() and "NOSYNC_OPTIONS" not in os.environ:
        os.environ["NOSYNC_OPTIONS"] = "mode=report"
    return bool(lib.nosync_sanitizer_start())


def active():
    return _dll is not None and bool(_dll.nosync_sanitizer_active())


def pause():
    return bool(_lib().nosync_sanitizer_pause())


def resume():
    return bool(_lib().nosync_sanitizer_resume())


def reset():
    """Forgets every finding and counter (e.g. after warm-up)."""
    _lib().nosync_sanitizer_reset()


def counters():
    c = _CCounters()
    _lib().nosync_sanitizer_counters(ctypes.byref(c))
    return {name: getattr(c, name) for name, _ in _CCounters._fields_}


def _apis(text):
    out = {}
    for part in filter(None, text.split(",")):
        name, _, n = part.partition("=")
        out[name] = int(n or 0)
    return out


def findings() -> List[Finding]:
    """Every finding so far, costliest first: one per (rule, .py file:line, op)."""
    lib = _lib()
    n = lib.nosync_sanitizer_findings(None, 0)
    arr = (_CFinding * max(n, 1))()
    n = min(n, lib.nosync_sanitizer_findings(ctypes.cast(arr, ctypes.c_void_p), n))
    return [Finding(f.rule.decode(), f.file.decode(errors="replace"), f.line, f.function.decode(errors="replace"),
                    f.op.decode(), _apis(f.apis.decode()), f.count, f.total_stall_ns / 1e3, f.max_stall_ns / 1e3)
            for f in arr[:n]]


def report(start_if_needed=True) -> List[Finding]:
    """The findings so far (starting the sanitizer first if nothing did)."""
    if start_if_needed and not active():
        start()
    return findings()


def write_report():
    """Writes the exit report now (once per process), where NOSYNC_OPTIONS says."""
    return bool(_lib().nosync_sanitizer_write_report())


class sync_free(contextlib.ContextDecorator):
    """A region that must not block the host on the GPU:

        with nosync.sync_free("train step"):
            step()

    At the end of the region, if any CUDA call in the process blocked the host
    meanwhile (autograd's threads included), raises HostSyncError naming each
    site: rule, .py file:line, op, API. Raises SanitizerUnavailable when the
    sanitizer cannot watch this process (pass strict=False to let the region
    pass unchecked instead, e.g. on a CPU-only run). Keep one region open at a
    time: syncs are counted process-wide."""

    def __init__(self, name="sync-free region", strict=True):
        self.name = name
        self.strict = strict

    def __enter__(self):
        self._active = start()
        self._token = _lib().nosync_sanitizer_region_begin()
        return self

    def __exit__(self, exc_type, exc, tb):
        stall = ctypes.c_uint64(0)
        text = ctypes.create_string_buffer(8192)
        n = _lib().nosync_sanitizer_region_end(self._token, ctypes.byref(stall), text, len(text))
        if exc_type is not None:
            return False
        if not self._active:
            if self.strict:
                raise SanitizerUnavailable(
                    "%s: the nosync sanitizer is not active in this process (no GPU or driver, or CUPTI held by a "
                    "profiler), so the absence of host syncs cannot be checked" % self.name)
            return False
        if n:
            raise HostSyncError("%s: %d host sync%s (%.0f us host stalled):\n%s" % (
                self.name, n, "" if n == 1 else "s", stall.value / 1e3, text.value.decode(errors="replace").rstrip()),
                syncs=n, stall_us=stall.value / 1e3)
        return False
