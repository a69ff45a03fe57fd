"""Backoff and restart intensity are pure and exact (R-SUP)."""

from __future__ import annotations

from random import Random

import pytest
from hypothesis import given, strategies as st

from supervisors import Backoff, ChildSpec, RestartIntensity


def test_backoff_without_jitter_doubles_up_to_the_cap() -> None:
    backoff = Backoff(initial=0.5, multiplier=2.0, maximum=5.0, jitter=0.0)
    delays = [backoff.delay(attempt, Random(0)) for attempt in range(6)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_backoff_with_a_fixed_seed_gives_exact_delays() -> None:
    backoff = Backoff(initial=1.0, multiplier=2.0, maximum=10.0, jitter=0.5)
    random = Random(42)
    delays = [backoff.delay(attempt, random) for attempt in range(6)]
    assert delays == [
        0.6802866007710582,
        1.974989244777333,
        3.4499413632617615,
        7.1071570474047085,
        6.317643929179938,
        6.616502562885444,
    ]


@given(
    initial=st.floats(0.0, 10.0),
    multiplier=st.floats(1.0, 10.0),
    extra=st.floats(0.0, 100.0),
    jitter=st.floats(0.0, 1.0),
    attempt=st.integers(0, 5000),
    seed=st.integers(0, 2**32),
)
def test_jitter_only_shortens_and_the_cap_is_a_hard_ceiling(
    initial: float, multiplier: float, extra: float, jitter: float, attempt: int, seed: int
) -> None:
    backoff = Backoff(initial=initial, multiplier=multiplier, maximum=initial + extra, jitter=jitter)
    unjittered = Backoff(initial=initial, multiplier=multiplier, maximum=initial + extra, jitter=0.0)
    ceiling = unjittered.delay(attempt, Random(seed))
    delay = backoff.delay(attempt, Random(seed))
    assert ceiling <= backoff.maximum
    assert (1.0 - jitter) * ceiling - 1e-9 <= delay <= ceiling


@pytest.mark.parametrize(
    "arguments",
    [
        {"initial": -1.0},
        {"multiplier": 0.5},
        {"initial": 2.0, "maximum": 1.0},
        {"jitter": 1.5},
        {"reset_after": -1.0},
    ],
)
def test_backoff_rejects_impossible_settings(arguments: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**arguments)


def test_intensity_window_counts_restarts_strictly_inside_the_last_period() -> None:
    intensity = RestartIntensity(max_restarts=2, period=10.0)
    assert intensity.admit((), 0.0) == (0.0,)
    assert intensity.admit((0.0,), 5.0) == (0.0, 5.0)
    assert intensity.admit((0.0, 5.0), 9.999) is None
    # The restart at 0 leaves the window exactly at 10.
    assert intensity.admit((0.0, 5.0), 10.0) == (5.0, 10.0)


def test_zero_max_restarts_never_admits_a_restart() -> None:
    assert RestartIntensity(max_restarts=0, period=1.0).admit((), 0.0) is None


@given(
    max_restarts=st.integers(0, 5),
    period=st.floats(0.1, 100.0),
    gaps=st.lists(st.floats(0.0, 50.0), max_size=30),
)
def test_admitted_restarts_never_exceed_the_budget_in_any_window(
    max_restarts: int, period: float, gaps: list[float]
) -> None:
    intensity = RestartIntensity(max_restarts=max_restarts, period=period)
    history: tuple[float, ...] = ()
    admitted: list[float] = []
    now = 0.0
    for gap in gaps:
        now += gap
        in_window = [moment for moment in admitted if moment > now - period]
        result = intensity.admit(history, now)
        assert (result is not None) == (len(in_window) < max_restarts)
        if result is not None:
            history = result
            admitted.append(now)
    for moment in admitted:
        assert len([other for other in admitted if moment - period < other <= moment]) <= max_restarts


@pytest.mark.parametrize("arguments", [{"max_restarts": -1}, {"period": 0.0}])
def test_intensity_rejects_impossible_settings(arguments: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RestartIntensity(**arguments)  # type: ignore[arg-type]


async def _noop(context: object) -> None:
    pass


def test_child_spec_rejects_an_empty_name_and_a_negative_shutdown_timeout() -> None:
    with pytest.raises(ValueError):
        ChildSpec("", _noop)
    with pytest.raises(ValueError):
        ChildSpec("child", _noop, shutdown_timeout=-1.0)
