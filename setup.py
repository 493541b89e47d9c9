"""Build and install npkit.

The repository folders map onto one import name, ``npkit``: ``sim/`` is ``npkit.sim``,
``compiler/`` is ``npkit.compiler`` and so on (DESIGN.md, "Layout").  The C++20 simulator
core in ``sim/core/`` is built as the pybind11 extension ``npkit.sim._core``; its decoder
header is generated from the ISA table first (``sim/isa_gen.py``).
"""

from __future__ import annotations

import os
import runpy
from pathlib import Path

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
FOLDERS = {  # import name -> folder
    "npkit": "npkit",
    "npkit.base": "base",
    "npkit.sim": "sim",
    "npkit.compiler": "compiler",
    "npkit.link": "link",
    "npkit.runtime": "runtime",
    "npkit.microblocks": "microblocks",
    "npkit.examples": "examples",
    "npkit.bench": "bench",
}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for name, folder in FOLDERS.items():
        packages.append(name)
        package_dir[name] = folder
        for sub in find_packages(folder):
            packages.append(f"{name}.{sub}")
            package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    return packages, package_dir


class BuildExt(build_ext):
    """Generate the ISA decoder header from the ISA table, then compile."""

    def run(self) -> None:
        runpy.run_path(str(ROOT / "sim" / "isa_gen.py"), run_name="__main__")
        super().run()


# NPKIT_SANITIZE=1 builds the extensions with AddressSanitizer + UBSan (scripts/test-sanitizers).
SANITIZE = (["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
             "-fno-sanitize-recover=undefined"] if os.environ.get("NPKIT_SANITIZE") else [])

# The core is built with -O3 and link-time optimisation: the handlers, the memory
# helpers and the event queue live in different files and are called per instruction or
# per event; LTO inlines across them (7 % fewer instructions per simulated frame,
# docs/performance.md section 2).
LTO = [] if SANITIZE else ["-flto=auto"]
core = Pybind11Extension(
    "npkit.sim._core",
    sorted(str(p.relative_to(ROOT)) for p in (ROOT / "sim" / "core").glob("*.cpp")),
    include_dirs=["sim/core"],
    depends=sorted(str(p.relative_to(ROOT)) for p in (ROOT / "sim" / "core").glob("*.hpp")),
    cxx_std=20,
    extra_compile_args=["-O3", "-Wall", "-Wextra", *LTO, *SANITIZE],
    extra_link_args=["-O3", *LTO, *SANITIZE],
)

# The LPM trie updater (runtime/trie, docs/lpm.md): route updates in place on the trie words.
trie = Pybind11Extension(
    "npkit.runtime._trie",
    sorted(str(p.relative_to(ROOT)) for p in (ROOT / "runtime" / "trie").glob("*.cpp")),
    include_dirs=["runtime/trie"],
    depends=sorted(str(p.relative_to(ROOT)) for p in (ROOT / "runtime" / "trie").glob("*.hpp")),
    cxx_std=20,
    extra_compile_args=["-O2", "-Wall", "-Wextra", *SANITIZE],
    extra_link_args=SANITIZE,
)

# The lab tester's per-frame work (bench/tester/cpp, docs/lab.md "The tester without Python
# per frame"): generation, pacing, signatures and batch parsing; zlib's CRC-32.
tester_fast = Pybind11Extension(
    "npkit.bench.tester._fast",
    sorted(str(p.relative_to(ROOT)) for p in (ROOT / "bench" / "tester" / "cpp").glob("*.cpp")),
    include_dirs=["bench/tester/cpp"],
    depends=sorted(str(p.relative_to(ROOT))
                   for p in (ROOT / "bench" / "tester" / "cpp").glob("*.hpp")),
    cxx_std=20,
    extra_compile_args=["-O2", "-Wall", "-Wextra", *SANITIZE],
    extra_link_args=SANITIZE,
    libraries=["z"],
)

packages, package_dir = _packages()
setup(
    name="npkit",
    version="0.1.0",
    description="An open toolkit for programming IXP-style network processors",
    python_requires=">=3.11",
    packages=packages,
    package_dir=package_dir,
    package_data={
        "npkit.sim": ["chips/*.toml", "systems/*.toml"],
        "npkit.examples": ["**/*"],
        "npkit.microblocks": ["**/*"],
        "npkit.compiler": ["**/*.g4", "**/*.mbl"],
        "npkit.link": ["platforms/*/*.toml", "dispatch/*.uc"],
        "npkit.runtime": ["data/*.json"],
    },
    ext_modules=[core, trie, tester_fast],
    cmdclass={"build_ext": BuildExt},
    install_requires=[
        "numpy>=1.26,<3",
        "dpkt>=1.9,<2",
        "click>=8.1,<9",
        "rich>=13,<16",
        "llvmlite>=0.43,<0.60",
        "antlr4-python3-runtime==4.13.2",
        "simpy>=4.1,<5",
        # the test lab (bench/lab): charts, the HTML report, sweeps as dask tasks
        "matplotlib>=3.7,<4",
        "markdown>=3.5,<4",
        "dask[distributed]>=2024.1",
        # per-packet traces in Perfetto's native protobuf (sim/perfetto_proto.py)
        "perfetto>=0.59,<1",
    ],
    extras_require={
        "test": ["pytest>=8", "pytest-xdist>=3", "hypothesis>=6.100", "scapy>=2.5", "ruff>=0.5",
                 "import-linter>=2.13,<3"],  # scripts/lint-imports: the layer contracts
    },
    entry_points={"console_scripts": ["npkit=npkit.cli:main"]},
)
