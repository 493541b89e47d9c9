"""Session-wide checks for the whole test tree.

The C++ extensions are part of the product, not optional extras: a test run without them
must fail at once with a message that says how to build them, not skip the chip's tests
(or fail hundreds of them one import error at a time)."""

from __future__ import annotations

import importlib

import pytest

# (module, what it is) -- built by `scripts/setup` (pip install -e .)
EXTENSIONS = (("npkit.sim._core", "the simulator core, sim/core"),
              ("npkit.runtime._trie", "the route table's trie helper, runtime/trie"))


def missing_extensions() -> list[str]:
    missing = []
    for module, what in EXTENSIONS:
        try:
            importlib.import_module(module)
        except ImportError as error:
            missing.append(f"  {module} ({what}): {error}")
    return missing


def pytest_sessionstart(session: pytest.Session) -> None:
    missing = missing_extensions()
    if missing:
        pytest.exit("the C++ extensions are not built or do not load:\n" + "\n".join(missing)
                    + "\nbuild them with: bash scripts/setup",
                    returncode=pytest.ExitCode.INTERNAL_ERROR)


BROADCAST = "ff:ff:ff:ff:ff:ff"


@pytest.fixture(autouse=True, scope="session")
def _frames_do_not_ask_the_network():
    """An ``Ether()`` without ``dst`` in front of IP or IPv6 makes scapy resolve the MAC
    address on the host's network when the frame is built (ARP or neighbour solicitation
    with a 2-second timeout, not cached when nobody answers: 2 to 4 s a frame where the
    destination is on-link, e.g. 192.0.2.9 on a 192.0.2.0/24 build machine).  Tests build
    frames offline: the destination is the broadcast address, what scapy falls back to."""
    from scapy.config import conf
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether

    with pytest.MonkeyPatch.context() as patch:
        for l3 in (IP, IPv6):
            patch.setitem(conf.neighbor.resolvers, (Ether, l3), lambda l2, l3: BROADCAST)
        yield
