"""What ``python -m wave_actors`` needs of the interpreter that runs it, said in one line when it is missing.

The package imports this module first. When the package is the program
(``python -m wave_actors``) and the interpreter cannot run it, too old or
without the dependencies (the system ``python3`` in a fresh checkout, before
``make`` has made ``.venv``), the command says what to install and exits 1
instead of showing a ``ModuleNotFoundError`` traceback from deep inside an
import. Imported as a library, it checks nothing: a missing dependency stays
an :class:`ImportError` for the importer to see.

Whatever the interpreter, this module must parse and run: it is what tells an
old one that it is too old. So no syntax newer than Python 3.6 here (f-strings, annotations).
"""

import sys

# The distributions of pyproject.toml's dependencies, by the module that each one installs.
_DEPENDENCIES = (
    ("trio", "trio"),
    ("mcp", "mcp"),
    ("attrs", "attrs"),
    ("cattrs", "cattrs"),
    ("psutil", "psutil"),
    ("trio_util", "trio-util"),
)

_INSTALL = (
    "install the command with `pipx install .` (or `pip install .` in a virtual environment) in the checkout, "
    "or use the checkout's .venv that `make demo` and `make test` create: .venv/bin/wave-actors"
)


def _run_as_the_program() -> bool:
    """Whether ``python -m wave_actors`` is running: the package is being imported to find its ``__main__``."""
    if sys.argv[:1] != ["-m"]:  # what sys.argv[0] is while -m imports the module's package
        return False
    original: list[str] = list(getattr(sys, "orig_argv", []))  # 3.10 and later
    if "-m" in original[:-1]:
        return original[original.index("-m") + 1] == "wave_actors"
    return True


def _refuse(reason: str) -> None:
    version = ".".join(str(part) for part in sys.version_info[:3])
    sys.stderr.write(f"wave-actors: error: {reason} ({sys.executable}, Python {version}); {_INSTALL}\n")
    raise SystemExit(1)


def check_interpreter() -> None:
    """Exit with a one-line explanation when ``python -m wave_actors`` runs on an interpreter that cannot run it."""
    if not _run_as_the_program():
        return
    if sys.version_info < (3, 11):  # noqa: UP036  # pyproject's requires-python is what pip checks, not python -m
        _refuse("wave-actors needs Python 3.11 or later")
    from importlib.util import find_spec

    missing = [distribution for module, distribution in _DEPENDENCIES if find_spec(module) is None]
    if missing:
        _refuse(f"this Python does not have what wave-actors needs: {', '.join(missing)} not installed")


check_interpreter()
