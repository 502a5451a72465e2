"""The one per-process container: the instance's settings, its clients and every cache it
keeps, each built on first use and all dropped together.

An owner keeps what it builds with `instance().get(build)`: `build` runs once per container,
with the container, so its settings are the ones it reads. Nothing here imports an owner,
and an owner registers nothing: a new container (`renew`, or a test's `install`) starts
from nothing, so nothing needs resetting.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from shared.config import Settings, load_settings

T = TypeVar("T")


class Instance:
    """Settings read from `environ` (the process's environment when None) at first use,
    and what owners built from them."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        self._settings: Settings | None = None
        self._built: dict[Callable[[Instance], Any], Any] = {}
        self._building: dict[Callable[[Instance], Any], threading.Lock] = {}
        self._lock = threading.Lock()

    @property
    def environ(self) -> Mapping[str, str]:
        """Where its settings are read from."""
        return os.environ if self._environ is None else self._environ

    @property
    def settings(self) -> Settings:
        """Read at first use: a setting that cannot work is refused then, saying why."""
        if self._settings is None:
            self._settings = load_settings(self.environ)
        return self._settings

    def get(self, build: Callable[[Instance], T]) -> T:
        """What `build` made for this container, made now if it has not been. Concurrent
        first calls build once (a client another call dropped would close the connection
        pool it shares); builders of other things do not wait for each other."""
        try:
            built: T = self._built[build]
        except KeyError:
            with self._lock:
                lock = self._building.setdefault(build, threading.Lock())
            with lock:
                if build not in self._built:
                    self._built[build] = build(self)
                built = self._built[build]
        return built

    def forget(self, build: Callable[[Instance], Any]) -> None:
        """Drop what `build` made: the next `get` makes it again."""
        self._built.pop(build, None)


_current = Instance()


def instance() -> Instance:
    return _current


def install(container: Instance) -> Instance:
    """Make `container` the process's own from now on."""
    global _current  # noqa: PLW0603 - the one process-wide container, swapped whole
    _current = container
    return container


def renew(environ: Mapping[str, str] | None = None) -> Instance:
    """A new container, nothing built yet, its settings read again from `environ` (the
    process's environment when None)."""
    return install(Instance(environ))


def settings() -> Settings:
    """The instance's settings."""
    return _current.settings
