"""Reconnect backoff: doubling from the first delay, never above the cap, never zero (jitter in
the upper half), and back to the first delay after a success."""

from __future__ import annotations

from core.store.reachability import Backoff


def test_backoff_doubles_is_capped_and_jittered() -> None:
    low = Backoff(first_s=0.5, cap_s=30.0, rng=lambda: 0.0)
    high = Backoff(first_s=0.5, cap_s=30.0, rng=lambda: 1.0)
    assert [low.next_delay() for _ in range(9)] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0]
    assert [high.next_delay() for _ in range(9)] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    high.reset()
    assert high.next_delay() == 0.5
