"""The header and address rules both compiled routers apply whatever the framing (Ethernet
in examples/router, PPP over POS in examples/pos_router): RFC 1812 and RFC 4291 / 8200 cases
whose frame is the test's plain packet with an address, a TTL or hop limit or one header
field changed.

A test module subclasses `AddressRules` as `TestAddressRules`, giving its framing's packet
builders, its checker (the router and the reference agree, and the outcome is the rule's),
its header patcher (bytes at an offset, the IPv4 header checksum fixed unless told not to)
as static methods, and where the IP header starts (`ip_at`); its `router` fixture is the
router under test."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from router_reference import EXC


class AddressRules:
    v4: Callable[..., bytes]
    v6: Callable[..., bytes]
    check: Callable[[object, bytes, tuple], None]
    patch: Callable[..., bytes]
    ip_at: int

    # ---- IPv4, RFC 1812 ----------------------------------------------------------------------

    def test_rfc1812_5_2_2_link_delivered_fewer_than_20_bytes(self, router):
        self.check(router, self.v4()[:self.ip_at + 19], ("drop", "ip_too_short"))

    def test_rfc1812_5_2_2_bad_checksum(self, router):
        frame, at = self.v4(), self.ip_at + 10
        self.check(router, self.patch(frame, at, bytes([frame[at] ^ 1, frame[at + 1]]),
                                      fix_checksum=False), ("drop", "bad_checksum"))

    def test_rfc1812_5_2_2_version_not_4(self, router):
        self.check(router, self.patch(self.v4(), self.ip_at, b"\x65"), ("drop", "bad_version"))

    def test_rfc1812_5_2_2_ihl_below_5(self, router):
        self.check(router, self.patch(self.v4(), self.ip_at, b"\x44"), ("drop", "bad_ihl"))

    def test_rfc1812_5_2_2_total_length_below_header(self, router):
        self.check(router, self.patch(self.v4(), self.ip_at + 2, (19).to_bytes(2, "big")),
                   ("drop", "bad_length"))

    def test_rfc1812_5_2_2_total_length_beyond_delivered(self, router):
        self.check(router, self.v4()[:-1], ("drop", "bad_length"))

    @pytest.mark.parametrize("ttl", [0, 1])
    def test_rfc1812_5_3_1_ttl_expired(self, router, ttl):
        self.check(router, self.v4(ttl=ttl), ("exception", EXC["ttl_expired"]))

    @pytest.mark.parametrize("src", ["0.1.2.3", "127.0.0.1", "240.0.0.1", "255.255.255.255"])
    def test_rfc1812_5_3_7_martian_source(self, router, src):
        self.check(router, self.v4(src=src), ("drop", "martian_source"))

    @pytest.mark.parametrize("dst", ["0.0.0.7", "127.1.1.1", "250.1.2.3"])
    def test_rfc1812_5_3_7_martian_destination(self, router, dst):
        self.check(router, self.v4(dst=dst), ("drop", "martian_destination"))

    @pytest.mark.parametrize("src", ["224.0.0.5", "239.1.1.1"])
    def test_rfc1812_5_3_7_multicast_source_not_forwarded(self, router, src):
        self.check(router, self.v4(src=src), ("drop", "martian_source"))

    @pytest.mark.parametrize("dst", ["224.0.0.1", "224.0.1.1", "239.255.255.250"])
    def test_rfc1812_multicast_destination_goes_to_the_control_plane(self, router, dst):
        self.check(router, self.v4(dst=dst), ("exception", EXC["for_router"]))

    @pytest.mark.parametrize("dst", ["10.0.0.1", "255.255.255.255"])
    def test_ipv4_for_the_router_goes_to_slow_path(self, router, dst):
        self.check(router, self.v4(dst=dst), ("exception", EXC["for_router"]))

    def test_ipv4_no_route(self, router):
        self.check(router, self.v4(dst="198.51.100.1"), ("exception", EXC["no_route"]))

    # ---- IPv6, RFC 8200 / RFC 4291 -----------------------------------------------------------

    def test_rfc8200_fewer_than_40_bytes(self, router):
        self.check(router, self.v6()[:self.ip_at + 39], ("drop", "ip_too_short"))

    def test_rfc8200_version_not_6(self, router):
        self.check(router, self.patch(self.v6(), self.ip_at, b"\x46", fix_checksum=False),
                   ("drop", "bad_version"))

    def test_rfc8200_payload_length_beyond_received(self, router):
        self.check(router, self.v6()[:-1], ("drop", "bad_length"))

    @pytest.mark.parametrize("hlim", [0, 1])
    def test_rfc8200_hop_limit_expired(self, router, hlim):
        self.check(router, self.v6(hlim=hlim), ("exception", EXC["hop_limit"]))

    def test_rfc4291_unspecified_source_not_forwarded(self, router):
        self.check(router, self.v6(src="::"), ("drop", "unspecified_source"))

    def test_rfc4291_loopback_destination_not_forwarded(self, router):
        self.check(router, self.v6(dst="::1"), ("drop", "loopback"))

    def test_rfc4291_loopback_source_not_forwarded(self, router):
        self.check(router, self.v6(src="::1"), ("drop", "loopback"))

    @pytest.mark.parametrize("dst", ["ff01::1", "ff02::1", "ff02::1:ff00:1", "ff05::2",
                                     "ff0e::1", "ff00::1", "ff0f::1", "ff15::42"])
    def test_rfc4291_multicast_destinations_of_every_scope_go_to_the_control_plane(
            self, router, dst):
        self.check(router, self.v6(dst=dst), ("exception", EXC["for_router6"]))

    def test_rfc4291_multicast_source_not_forwarded(self, router):
        self.check(router, self.v6(src="ff02::1"), ("drop", "multicast_source"))

    @pytest.mark.parametrize(("src", "dst"), [("fe80::1", "2001:db8:1::1"),
                                              ("2001:db8:9::9", "febf::1")])
    def test_rfc4291_link_local_never_leaves_the_link(self, router, src, dst):
        self.check(router, self.v6(src=src, dst=dst), ("drop", "link_local"))

    def test_ipv6_for_the_router_goes_to_slow_path(self, router):
        self.check(router, self.v6(dst="2001:db8::1"), ("exception", EXC["for_router6"]))

    def test_ipv6_no_route(self, router):
        self.check(router, self.v6(dst="2001:dead::1"), ("exception", EXC["no_route6"]))
