"""Where the package's shared libraries are: nosync/lib/ once installed,
or the paths named by NOSYNC_SANITIZER_LIB / NOSYNC_KERNELS_LIB (a build tree)."""
import glob
import os
import sysconfig

_HERE = os.path.dirname(os.path.abspath(__file__))


def _find(env, name):
    path = os.environ.get(env)
    if path:
        return path
    path = os.path.join(_HERE, "lib", name)
    return path if os.path.exists(path) else None


def sanitizer_path():
    """libnosync_sanitizer.so: the copy this process was injected with, if
    any (the loader then hands back that very copy, so the in-code API and the
    injected sanitizer are one), else the package's own."""
    injected = os.environ.get("CUDA_INJECTION64_PATH", "")
    if os.path.basename(injected).startswith("libnosync_sanitizer") and os.path.exists(injected):
        return injected
    return _find("NOSYNC_SANITIZER_LIB", "libnosync_sanitizer.so")


def kernels_path():
    return _find("NOSYNC_KERNELS_LIB", "libnosync_kernels.so")


def cupti_dirs():
    """Directories holding libcupti.so.* in this environment (the nvidia-*
    wheels torch depends on), for a run whose build found CUPTI elsewhere."""
    out = []
    site = sysconfig.get_paths()["purelib"]
    for pattern in ("nvidia/cu*/lib", "nvidia/cuda_cupti/lib"):
        for d in sorted(glob.glob(os.path.join(site, pattern))):
            if glob.glob(os.path.join(d, "libcupti.so*")):
                out.append(d)
    return out
