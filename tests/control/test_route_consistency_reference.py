"""The version-window reference used by the live-update tests, checked on hand examples."""

from route_consistency import VersionHistory, brute_force_lpm


def test_brute_force_prefers_the_longest_prefix():
    routes = {(0, 0): 1, (0x0A000000, 8): 2, (0x0A010000, 16): 3}
    assert brute_force_lpm(routes, 0x0A010203) == 3
    assert brute_force_lpm(routes, 0x0A020203) == 2
    assert brute_force_lpm(routes, 0x0B000000) == 1
    assert brute_force_lpm({}, 1) is None


def test_windows_cover_versions_in_progress():
    h = VersionHistory({(0, 0): 0})
    h.record({(0, 0): 1}, start=100, end=150)   # version 1
    h.record({(0, 0): 2}, start=300, end=320)   # version 2
    assert list(h.possible_versions(0, 99)) == [0]
    assert list(h.possible_versions(0, 100)) == [0, 1]
    assert list(h.possible_versions(120, 140)) == [0, 1]
    assert list(h.possible_versions(151, 299)) == [1]
    assert list(h.possible_versions(151, 310)) == [1, 2]
    assert list(h.possible_versions(321, 10_000)) == [2]
    assert h.allowed_next_hops(5, 120, 310) == {0, 1, 2}
