"""`npkit bench verdict`'s argument checks (the verdict itself: tests/bench/lab/test_verdict.py)."""

from __future__ import annotations

from cli_invoke import invoke


def test_a_size_too_small_for_a_udp_packet_is_a_user_error() -> None:
    code, out = invoke("bench", "verdict", "--sizes", "20")
    assert code == 1 and "28..1518" in out


def test_forwarding_mes_only_with_the_rings_path() -> None:
    code, out = invoke("bench", "verdict", "--data-path", "pool", "--fwd-mes", "2")
    assert code != 0 and "--fwd-mes" in out and "rings" in out


def test_forwarding_mes_out_of_range() -> None:
    code, out = invoke("bench", "verdict", "--data-path", "rings", "--fwd-mes", "9")
    assert code != 0 and "--fwd-mes" in out
