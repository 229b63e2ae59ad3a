"""PEP 517 build backend for the `nosync` Python package (pyproject.toml
names it with backend-path = ["python"]). No build requirements: it needs
only CMake, a C++ compiler, the CUDA toolkit and the torch already installed
in the environment, which is why it is installed with

    pip install --no-build-isolation .

(the usual way for a torch C++ extension: the build sees the environment's
torch and builds against it; NOSYNC_TORCH_DIR may name torch's CMake prefix
instead). It configures this repository's CMake project with only the
sanitizer and the kernels (LibTorch's CMake config brings torch's ABI
flags), builds libnosync_sanitizer.so and libnosync_kernels.so and packs them
with the pure-Python modules of python/nosync/ into a wheel.

    NOSYNC_BUILD_DIR=build/cpu   reuse a configured build tree (only the two
                                 targets are brought up to date; CI does this)
"""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "python", "nosync")
NAME = "nosync"
TARGETS = (("sanitizer", "nosync_sanitizer", "libnosync_sanitizer.so"),
           ("kernels", "nosync_kernels", "libnosync_kernels.so"))


def _version():
    text = open(os.path.join(PKG, "__init__.py")).read()
    return re.search(r'__version__ = "([^"]+)"', text).group(1)


def _metadata():
    return "\n".join([
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + _version(),
        "Summary: Find and remove the CPU-GPU syncs that keep GPUs idle in PyTorch training: sanitizer, "
        "sync-free regions, pytest support, multi-tensor kernels",
        "Requires-Python: >=3.9",
        "",
        "nosync for Python: `python -m nosync run train.py`, `with nosync.sync_free():`, `nosync.report()`,",
        "the pytest fixture `no_host_sync`, and `nosync.kernels` over torch.ops.nosync. See README.md.",
        ""])


ENTRY_POINTS = "[pytest11]\nnosync = nosync.pytest_plugin\n"


def _say(msg):
    sys.stderr.write("nosync build: %s\n" % msg)
    sys.stderr.flush()


def _torch_cmake_dir():
    d = os.environ.get("NOSYNC_TORCH_DIR")
    if d:
        return d
    try:
        import torch  # noqa: F401
        import torch.utils
    except ImportError:
        raise SystemExit("nosync build: torch is not importable here. Install nosync into the environment that has "
                         "torch with `pip install --no-build-isolation .` (or set NOSYNC_TORCH_DIR to torch's "
                         "share/cmake folder)")
    return torch.utils.cmake_prefix_path


def _compiler_env():
    # The libraries load into Python next to torch: they must share the
    # process's libstdc++.so. A compiler that cannot name its libstdc++.so
    # links it statically (tests/gpu/run explains); take the system g++ then.
    env = dict(os.environ)
    cxx = env.get("CXX", "c++")

    def shared_libstdcxx(compiler):
        try:
            out = subprocess.run([compiler, "-print-file-name=libstdc++.so"], capture_output=True, text=True)
            return out.stdout.strip().startswith("/")
        except OSError:
            return False

    if not shared_libstdcxx(cxx) and shared_libstdcxx("/usr/bin/g++"):
        env["CXX"] = env["CUDAHOSTCXX"] = "/usr/bin/g++"
    return env


def _run(cmd, env):
    _say("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, env=env, stdout=sys.stderr)


def _build_libraries():
    env = _compiler_env()
    build = os.environ.get("NOSYNC_BUILD_DIR")
    if build:
        build = os.path.abspath(build)
    else:
        build = os.path.join(ROOT, "build", "python")
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        _run(["cmake", "-S", ROOT, "-B", build] + gen + [
            "-DCMAKE_BUILD_TYPE=Release", "-DNOSYNC_LINT=OFF", "-DNOSYNC_TESTS=OFF", "-DNOSYNC_EXAMPLES=OFF",
            "-DNOSYNC_TORCH_DIR=" + _torch_cmake_dir()], env)
    jobs = os.environ.get("NOSYNC_BUILD_JOBS", str(os.cpu_count() or 2))
    found = {}
    for part, target, lib in TARGETS:
        # A part switched off at configure time (no CUDA toolkit, no LibTorch)
        # has no target: the package is built without it.
        if not os.path.isdir(os.path.join(build, part, "CMakeFiles", target + ".dir")):
            _say("%s is not part of this build (see the configure summary); packaged without it" % lib)
            continue
        _run(["cmake", "--build", build, "--target", target, "-j", jobs], env)
        path = os.path.join(build, part, lib)
        if not os.path.exists(path):
            raise SystemExit("nosync build: %s was not produced in %s" % (lib, build))
        found[lib] = path
    if "libnosync_sanitizer.so" not in found:
        raise SystemExit("nosync build: libnosync_sanitizer.so is required (it needs the CUDA toolkit with CUPTI)")
    return found


def _dist_info(directory):
    info = os.path.join(directory, "%s-%s.dist-info" % (NAME, _version()))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(_metadata())
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write(ENTRY_POINTS)
    with open(os.path.join(info, "top_level.txt"), "w") as f:
        f.write(NAME + "\n")
    return os.path.basename(info)


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "py3-none-" + plat


# ---------------------------------------------------------------- PEP 517 hooks
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _dist_info(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    libs = _build_libraries()
    version = _version()
    wheel_name = "%s-%s-%s.whl" % (NAME, version, _tag())
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        info = _dist_info(tmp)
        with open(os.path.join(tmp, info, "WHEEL"), "w") as f:
            f.write("Wheel-Version: 1.0\nGenerator: nosync_build\nRoot-Is-Purelib: false\nTag: %s\n" % _tag())
        files = []
        for name in sorted(os.listdir(PKG)):
            if name.endswith(".py"):
                files.append((os.path.join(PKG, name), "nosync/" + name))
        for lib, path in sorted(libs.items()):
            staged = os.path.join(tmp, lib)
            shutil.copy2(path, staged)
            # Debug info is for the project's own builds; the wheel keeps symbols.
            if shutil.which("strip"):
                subprocess.run(["strip", "--strip-debug", staged], check=False)
            files.append((staged, "nosync/lib/" + lib))
        for name in ("METADATA", "WHEEL", "entry_points.txt", "top_level.txt"):
            files.append((os.path.join(tmp, info, name), "%s/%s" % (info, name)))
        out = os.path.join(wheel_directory, wheel_name)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for src, arc in files:
                data = open(src, "rb").read()
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                zi = zipfile.ZipInfo(arc, date_time=(2026, 1, 1, 0, 0, 0))
                zi.external_attr = (0o755 if arc.endswith(".so") else 0o644) << 16
                zi.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(zi, data)
                records.append("%s,sha256=%s,%d" % (arc, digest, len(data)))
            records.append("%s/RECORD,," % info)
            z.writestr("%s/RECORD" % info, "\n".join(records) + "\n")
    _say("wrote " + wheel_name)
    return wheel_name


# What a source distribution needs: the CMake project's parts the package builds.
SDIST_PATHS = ("CMakeLists.txt", "CMakePresets.json", "README.md", "pyproject.toml", "cmake", "rules", "sanitizer",
               "kernels", "python")


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    out = os.path.join(sdist_directory, base + ".tar.gz")

    def keep(info):
        return None if "__pycache__" in info.name or info.name.endswith(".pyc") else info

    with tarfile.open(out, "w:gz") as tar:
        for p in SDIST_PATHS:
            tar.add(os.path.join(ROOT, p), arcname=base + "/" + p, filter=keep)
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(_metadata())
        tar.add(f.name, arcname=base + "/PKG-INFO")
        os.unlink(f.name)
    return os.path.basename(out)
