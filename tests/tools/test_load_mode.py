"""Load-mode resolution: user preference, then global default, then working set; fallbacks and the TTL (R-WS-1)."""

from __future__ import annotations

import logging
from collections.abc import Hashable

import pytest
import trio
import trio.testing
from tools_support import files_server, server, snapshot

from wave_actors import LoadMode
from wave_actors._tools import LoadModeResolver, parse_load_mode


class Lookups:
    """Sync lookups that count their calls; ``answers`` per user and ``default`` for the global one."""

    def __init__(self, answers: dict[Hashable, object] | None = None, default: object = None) -> None:
        self.answers = dict(answers or {})
        self.default = default
        self.user_calls: list[Hashable] = []
        self.global_calls = 0

    def user(self, user: Hashable) -> object:
        self.user_calls.append(user)
        answer = self.answers.get(user)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def global_default(self) -> object:
        self.global_calls += 1
        if isinstance(self.default, Exception):
            raise self.default
        return self.default

    def resolver(self, ttl: float = 5.0) -> LoadModeResolver:
        return LoadModeResolver(self.user, self.global_default, ttl=ttl)  # type: ignore[arg-type]


async def test_the_user_preference_wins_over_the_global_default() -> None:
    lookups = Lookups({"ann": "full"}, default="working_set")
    assert await lookups.resolver().resolve("ann") is LoadMode.FULL
    assert lookups.global_calls == 0


async def test_without_a_preference_the_global_default_applies() -> None:
    lookups = Lookups({}, default="FULL")
    assert await lookups.resolver().resolve("bob") is LoadMode.FULL
    assert lookups.user_calls == ["bob"] and lookups.global_calls == 1


async def test_without_any_setting_the_mode_is_working_set() -> None:
    assert await Lookups().resolver().resolve("bob") is LoadMode.WORKING_SET
    assert await LoadModeResolver().resolve("bob") is LoadMode.WORKING_SET


async def test_an_anonymous_user_skips_the_preference() -> None:
    lookups = Lookups({None: "full"}, default="full")
    assert await lookups.resolver().resolve(None) is LoadMode.FULL
    assert lookups.user_calls == []


async def test_async_lookups_are_awaited() -> None:
    async def preference(user: Hashable) -> str:
        await trio.lowlevel.checkpoint()
        return "full"

    assert await LoadModeResolver(preference).resolve("ann") is LoadMode.FULL


@pytest.mark.parametrize("answer", ["fulll", 3, "", ["full"], LoadMode])
async def test_an_invalid_answer_falls_back_to_working_set_with_a_warning(
    answer: object, caplog: pytest.LogCaptureFixture
) -> None:
    # R-WS-1: invalid → working_set, never raised; the global default is not consulted either.
    lookups = Lookups({"ann": answer}, default="full")
    with caplog.at_level(logging.WARNING):
        assert await lookups.resolver().resolve("ann") is LoadMode.WORKING_SET
    assert "not a load mode" in caplog.text and "user preference" in caplog.text


@pytest.mark.parametrize("which", ["user", "global"])
async def test_a_failing_lookup_falls_back_to_working_set_and_is_logged_once(
    which: str, caplog: pytest.LogCaptureFixture
) -> None:
    failure = ConnectionError("settings database is down")
    lookups = Lookups({"ann": failure} if which == "user" else {}, default=failure if which == "global" else "full")
    resolver = lookups.resolver(ttl=0)
    with caplog.at_level(logging.WARNING):
        for user in ("ann", "ann", "ann"):
            assert await resolver.resolve(user) is LoadMode.WORKING_SET
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and "settings database is down" in warnings[0].getMessage()


async def test_answers_are_kept_per_user_for_the_ttl(mock_clock: trio.testing.MockClock) -> None:
    lookups = Lookups({"ann": "full"}, default="working_set")
    resolver = lookups.resolver(ttl=5.0)
    assert await resolver.resolve("ann") is LoadMode.FULL
    lookups.answers["ann"] = "working_set"  # the user changes the preference
    mock_clock.jump(4.9)
    assert await resolver.resolve("ann") is LoadMode.FULL  # still kept
    assert await resolver.resolve("bob") is LoadMode.WORKING_SET  # another key
    mock_clock.jump(0.2)
    assert await resolver.resolve("ann") is LoadMode.WORKING_SET  # expired: asked again
    assert lookups.user_calls == ["ann", "bob", "ann"]


async def test_a_fallback_is_kept_for_the_ttl_too(mock_clock: trio.testing.MockClock) -> None:
    # A failing settings store is not hammered every turn.
    lookups = Lookups({"ann": RuntimeError("down")})
    resolver = lookups.resolver()
    for _ in range(3):
        assert await resolver.resolve("ann") is LoadMode.WORKING_SET
    assert lookups.user_calls == ["ann"]
    mock_clock.jump(5.0)
    await resolver.resolve("ann")
    assert lookups.user_calls == ["ann", "ann"]


async def test_forget_drops_a_kept_answer() -> None:
    lookups = Lookups({"ann": "full"})
    resolver = lookups.resolver()
    await resolver.resolve("ann")
    lookups.answers["ann"] = "working_set"
    resolver.forget("ann")
    assert await resolver.resolve("ann") is LoadMode.WORKING_SET


async def test_zero_ttl_asks_every_time() -> None:
    lookups = Lookups({"ann": "full"})
    resolver = lookups.resolver(ttl=0)
    for _ in range(3):
        await resolver.resolve("ann")
    assert lookups.user_calls == ["ann"] * 3


async def test_a_session_without_enabled_servers_is_resolved_without_any_lookup() -> None:
    # Source 001 §5.5: resolve after the empty check, so users without servers cost no query.
    lookups = Lookups({"ann": "full"}, default="full")
    resolver = lookups.resolver()
    assert await resolver.resolve("ann", snapshot=snapshot()) is LoadMode.WORKING_SET
    assert await resolver.resolve("ann", snapshot=snapshot(server("off", enabled=False))) is LoadMode.WORKING_SET
    assert (lookups.user_calls, lookups.global_calls) == ([], 0)
    assert await resolver.resolve("ann", snapshot=snapshot(files_server())) is LoadMode.FULL


def test_a_negative_ttl_is_refused() -> None:
    with pytest.raises(ValueError, match="ttl"):
        LoadModeResolver(ttl=-1)


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("working_set", LoadMode.WORKING_SET),
        ("WORKING_SET", LoadMode.WORKING_SET),
        ("working-set", LoadMode.WORKING_SET),
        (" full ", LoadMode.FULL),
        (LoadMode.FULL, LoadMode.FULL),
        ("both", None),
        (1, None),
        (None, None),
    ],
)
def test_parse_load_mode(value: object, mode: LoadMode | None) -> None:
    assert parse_load_mode(value) is mode
