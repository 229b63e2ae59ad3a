"""CPU test of how libnosync_sanitizer.so gathers a Python program's frames
(sanitizer/runtime/python_stack.cpp), through the library's test hook
nosync_sanitizer_debug_python_stack, which gathers exactly as the CUPTI
callback does. Checks the exact .py line with the GIL released (how ATen's
bindings call CUDA) and held, that gathering never waits for the GIL while
another thread holds it, threads in parallel, and a forked child.

    python3 python_stack_test.py /path/to/libnosync_sanitizer.so
"""
import ctypes
import os
import sys
import threading
import time

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def bind(dll):
    f = dll.nosync_sanitizer_debug_python_stack
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint64)]
    return f


LIB = sys.argv[1]
released = bind(ctypes.CDLL(LIB))   # ctypes.CDLL releases the GIL around the call
held = bind(ctypes.PyDLL(LIB))      # ctypes.PyDLL keeps it


def gather(fn, delay_us=0):
    buf = ctypes.create_string_buffer(16384)
    ns = ctypes.c_uint64(0)
    n = fn(buf, len(buf), delay_us, ctypes.byref(ns))
    return buf.raw[:n].decode(), ns.value


def first_frame(text):
    """The frame that called gather() (gather's own frame is innermost)."""
    lines = text.splitlines()
    return lines[1].strip() if len(lines) > 1 else ""


def here():
    return sys._getframe(1).f_lineno


def gil_released():
    line = here() + 1
    text, _ = gather(released)
    return text, line


def gil_held():
    line = here() + 1
    text, _ = gather(held)
    return text, line


text, line = gil_released()
check(first_frame(text) == 'File "%s", line %d in gil_released' % (__file__, line),
      "GIL released: innermost frame is this file:%d (%r)" % (line, first_frame(text)))
check(text.splitlines()[0].strip().endswith(" in gather"), "innermost frame is gather()")
check("in <module>" in text.splitlines()[-1], "outermost frame is <module>")
text, line = gil_held()
check(first_frame(text) == 'File "%s", line %d in gil_held' % (__file__, line),
      "GIL held by the caller: this file:%d (%r)" % (line, first_frame(text)))

# Another thread holds the GIL for a whole second (a C call through PyDLL
# never releases it); gathering on this thread must not wait for it.
result = {}


def gather_while_gil_held_elsewhere():
    result["text"], result["ns"] = gather(released, delay_us=200000)


t = threading.Thread(target=gather_while_gil_held_elsewhere)
t.start()
time.sleep(0.05)
libc = ctypes.PyDLL(None)
start = time.monotonic()
libc.usleep(1000000)  # holds the GIL: the other thread gathers meanwhile
t.join()
check(result.get("ns", 1 << 62) < 100_000_000,
      "gathering while another thread holds the GIL took %.3f ms (< 100 ms: it did not wait)" %
      (result.get("ns", 0) / 1e6))
check("in gather_while_gil_held_elsewhere" in first_frame(result.get("text", "")),
      "... and still names the thread's own frame (%r)" % first_frame(result.get("text", "")))

# Threads in parallel: each sees its own frames, none hangs.
per_thread = {}


def worker(k):
    seen = set()
    for _ in range(50):
        text, _ = gather(released)
        seen.add(first_frame(text))
    per_thread[k] = seen


threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for th in threads:
    th.start()
for th in threads:
    th.join(timeout=60)
check(all(not th.is_alive() for th in threads), "8 threads x 50 gatherings finished")
check(len(per_thread) == 8 and all(len(s) == 1 and "in worker" in next(iter(s)) for s in per_thread.values()),
      "each thread saw only its own innermost frame (%s)" % sorted(set().union(*per_thread.values())))

# A forked child gathers its own stack (its own memfd, not the parent's).
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)

    def in_child():
        return gather(released)[0]

    os.write(w, first_frame(in_child()).encode())
    os._exit(0)
os.close(w)
child = os.read(r, 4096).decode()
os.waitpid(pid, 0)
check("in in_child" in child, "forked child names its own frame (%r)" % child)
text, line = gil_released()
check(first_frame(text).endswith("line %d in gil_released" % line), "parent unaffected after the fork")

# Cost of one gathering (this many frames deep), for the record.
def deep(n):
    if n:
        return deep(n - 1)
    costs = sorted(gather(released)[1] for _ in range(200))
    return costs[len(costs) // 2]


print("median gathering cost, 20 frames deep: %.1f us" % (deep(18) / 1e3))
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
