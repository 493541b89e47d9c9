"""Hypothesis strategies shared by the router tests (Ethernet and POS): addresses that are
mostly routed by the tests' small tables, some special ones, some random."""

from __future__ import annotations

import ipaddress

from hypothesis import strategies as st

ROUTED4 = ["10.1.2.3", "10.7.7.7", "192.0.2.9", "100.64.0.5"]
ODD4 = ["10.0.0.1", "198.51.100.1", "127.0.0.1", "0.0.0.1", "255.255.255.255", "240.0.0.9"]
ROUTED6 = ["2001:db8:1::1", "2001:db8:77::1", "2001:db8:5::9", "2001:db8:6::6"]
ODD6 = ["2001:db8::1", "2001:dead::1", "::", "::1", "fe80::1", "ff02::1"]


def addresses(routed: list[str], odd: list[str], bits: int, version):
    """Mostly well-behaved addresses, some special ones, some random."""
    rand = st.integers(0, 2**bits - 1).map(lambda x: str(version(x)))
    return st.one_of(st.sampled_from(routed), st.sampled_from(routed), st.sampled_from(odd),
                     rand)


addr4 = addresses(ROUTED4, ODD4, 32, ipaddress.IPv4Address)
addr6 = addresses(ROUTED6, ODD6, 128, ipaddress.IPv6Address)
src4 = st.one_of(st.just("198.18.0.1"), addr4)
src6 = st.one_of(st.just("2001:db8:99::1"), addr6)
payload = st.binary(max_size=40) | st.sampled_from([b"y" * 700, b"z" * 1300])
rare = st.integers(0, 5).map(lambda x: x == 0)  # true one time in six
