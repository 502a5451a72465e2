"""Stable pattern ids across refreshes: the groups a refresh finds are matched to the
patterns already known by the sessions they share.

- A group takes the id of the known pattern it shares the most sessions with (its
  parent), unless a sibling shares more with that parent: then it is split off, with a
  new id, recorded as split from the parent.
- A known pattern whose sessions now lie mostly in a group whose id is another pattern's
  is merged into it, and recorded so.
- A group that shares no session with any known pattern is new.
- A known pattern no group shares a session with is left as it was (it stops growing)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Matched:
    ids: list[str]
    """Each group's pattern id, in the groups' order."""
    kept: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    split: dict[str, list[str]] = field(default_factory=dict)
    """Known id → the new ids split off it."""
    merged: dict[str, str] = field(default_factory=dict)
    """Known id → the id it was merged into."""


def matched(
    known: Mapping[str, frozenset[str]],
    found: Sequence[frozenset[str]],
    new_id: Callable[[], str],
) -> Matched:
    """Which pattern each found group is, given each known pattern's member sessions."""
    parents = [_parent(known, group) for group in found]
    heir = _heirs(known, found, parents)
    result = Matched(ids=[])
    for index, parent in enumerate(parents):
        if parent is not None and heir.get(parent) == index:
            result.ids.append(parent)
            result.kept.append(parent)
            continue
        pattern_id = new_id()
        result.ids.append(pattern_id)
        if parent is None:
            result.created.append(pattern_id)
        else:
            result.split.setdefault(parent, []).append(pattern_id)
    for pattern_id, members in known.items():
        if pattern_id in result.kept or not members:
            continue
        best = _best_group(members, found)
        if best is not None and result.ids[best] != pattern_id:
            result.merged[pattern_id] = result.ids[best]
    return result


def _overlap(one: frozenset[str], two: frozenset[str]) -> int:
    return len(one & two)


def _parent(known: Mapping[str, frozenset[str]], group: frozenset[str]) -> str | None:
    """The known pattern sharing the most sessions with the group (ties: the smaller id)."""
    shared = [(-_overlap(members, group), pattern_id) for pattern_id, members in known.items()]
    best = min(shared, default=None)
    return best[1] if best is not None and best[0] < 0 else None


def _heirs(
    known: Mapping[str, frozenset[str]],
    found: Sequence[frozenset[str]],
    parents: Sequence[str | None],
) -> dict[str, int]:
    """Each known pattern's heir: of the groups it is parent of, the one sharing most."""
    heirs: dict[str, int] = {}
    for index, parent in enumerate(parents):
        if parent is None:
            continue
        earlier = heirs.get(parent)
        shared = _overlap(known[parent], found[index])
        if earlier is None or shared > _overlap(known[parent], found[earlier]):
            heirs[parent] = index
    return heirs


def _best_group(members: frozenset[str], found: Sequence[frozenset[str]]) -> int | None:
    """The group holding most of the pattern's sessions, when one holds any."""
    shared = [(-_overlap(members, group), index) for index, group in enumerate(found)]
    best = min(shared, default=None)
    return best[1] if best is not None and best[0] < 0 else None
