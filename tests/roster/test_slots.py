"""Which shared connection each session of a project uses: the pure decision of a reconcile (R-SCOPE-1, R-SCOPE-3)."""

from __future__ import annotations

import itertools

from wave_actors import ServerConfig, Source
from wave_actors._roster.slots import Slot, decide


def entry(name: str, command: str) -> ServerConfig:
    return ServerConfig(
        name=name, source=Source.PROJECT, origin=".mcp.json", type="stdio", command=command, fingerprint=command
    )


DOCS = entry("docs", "docs-server")
OTHER_DOCS = entry("docs", "someone-elses-docs-server")


def test_sessions_that_loaded_different_entries_under_one_name_get_a_connection_each() -> None:
    decision = decide({"a": {"docs": DOCS}, "b": {"docs": OTHER_DOCS}}, {}, {}, itertools.count(1))
    assert decision.targets["a"]["docs"] != decision.targets["b"]["docs"]
    assert sorted(decision.wanted[slot].fingerprint for slot in decision.plan.added) == sorted(
        [DOCS.fingerprint, OTHER_DOCS.fingerprint]
    )


def test_a_connection_whose_entry_is_still_loaded_stays_and_a_left_over_one_retires() -> None:
    kept, unused = Slot("docs", 1), Slot("docs", 2)
    decision = decide({"a": {"docs": DOCS}}, {kept: DOCS, unused: OTHER_DOCS}, {kept: {"a"}}, itertools.count(3))
    assert decision.targets == {"a": {"docs": kept}}
    assert (decision.plan.kept, decision.plan.removed, decision.plan.added) == ((kept,), (unused,), ())


def test_a_connection_whose_sessions_now_load_another_entry_reloads_in_place_for_them() -> None:
    slot = Slot("docs", 1)
    decision = decide(
        {"a": {"docs": OTHER_DOCS}, "b": {"docs": OTHER_DOCS}}, {slot: DOCS}, {slot: {"a", "b"}}, itertools.count(2)
    )
    assert decision.targets == {"a": {"docs": slot}, "b": {"docs": slot}}
    assert decision.plan.changed == (slot,) and decision.wanted[slot] == OTHER_DOCS


def test_a_connection_nobody_holds_is_never_reloaded_for_an_entry_it_was_not_made_for() -> None:
    slot = Slot("docs", 1)
    decision = decide({"a": {"docs": OTHER_DOCS}}, {slot: DOCS}, {}, itertools.count(2))
    new = decision.targets["a"]["docs"]
    assert new != slot and decision.plan.added == (new,) and decision.plan.removed == (slot,)
