"""Shared helpers for the MBL tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from npkit.compiler.mbl import compile_file, compile_source

PROGRAMS = Path(__file__).parent / "programs"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def ipv4_ttl():
    from npkit.compiler.mbl import NativeProgram

    return NativeProgram(compile_file(PROGRAMS / "ipv4_ttl.mbl"), "ipv4_ttl")


@pytest.fixture(scope="session")
def l2_bridge():
    from npkit.compiler.mbl import NativeProgram

    return NativeProgram(compile_file(REPO / "microblocks" / "l2_bridge.mbl"), "l2_bridge")


def _native_from(text: str, block: str = "b"):
    from npkit.compiler.mbl import NativeProgram

    return NativeProgram(compile_source(text, "test.mbl"), block)


@pytest.fixture(scope="session")
def native_from():
    """Compile MBL text and JIT one of its blocks (default: the block named b)."""
    return _native_from
