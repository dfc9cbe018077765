"""The subcommand registry of the command line (:mod:`coxinfluence.cli`).

Subcommands live in a registry (:data:`SUBCOMMANDS`); each is a :class:`Subcommand`
with a name, a one-line help, a function adding its arguments to an
``argparse.ArgumentParser`` and a function running it from the parsed namespace and
returning an exit code. Add one with :func:`register`::

    register(Subcommand("audit", "...", add_arguments=_audit_args, run=_audit_run))

``main(argv)`` returns 0 on success, 2 on invalid input (a ``ValueError`` from the
subcommand, or no subcommand; the message, naming the problem, goes to stderr); arguments
argparse cannot parse make it exit with status 2 (``SystemExit``), argparse's convention.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass
from typing import Callable

__all__ = ["Subcommand", "SUBCOMMANDS", "register", "build_parser", "main",
           "add_progress_argument", "show_progress"]


@dataclass(frozen=True)
class Subcommand:
    """One ``coxinfluence`` subcommand."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None


SUBCOMMANDS: dict[str, Subcommand] = {}


def register(command: Subcommand) -> Subcommand:
    """Add ``command`` to the registry (a name may be registered once)."""
    if command.name in SUBCOMMANDS:
        raise ValueError(f"subcommand {command.name!r} is already registered")
    SUBCOMMANDS[command.name] = command
    return command


def build_parser(registry: dict[str, Subcommand] | None = None) -> argparse.ArgumentParser:
    """The top-level parser with one subparser per registered subcommand."""
    registry = SUBCOMMANDS if registry is None else registry
    parser = argparse.ArgumentParser(
        prog="coxinfluence",
        description="Influence diagnostics for survival models: Cox, parametric AFT, "
                    "Fine-Gray, cause-specific and multi-state (Reid's IF, the VIF, exact "
                    "leave-one-out refits).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in registry.values():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.description or cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run)
    return parser


def add_progress_argument(p: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress``, the same on every subcommand: show the progress
    bars on stderr always or never; by default only when stderr is a terminal (a log file
    or a pipe gets no carriage-return lines)."""
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show progress bars on stderr (--progress) or never (--no-progress); "
                        "default: only when stderr is a terminal, so logs and pipes get none")


def show_progress(flag: bool | None) -> bool:
    """Whether to show progress bars: ``flag`` when given, else whether stderr is a
    terminal."""
    if flag is not None:
        return bool(flag)
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):        # closed or replaced by an object without it
        return False


def main(argv: list[str] | None = None, *, registry: dict[str, Subcommand] | None = None) -> int:
    """Entry point; returns the exit code. While the subcommand runs, a warning prints as
    one line, ``warning: <message>`` (:func:`_warning_line`)."""
    parser = build_parser(registry)
    args = parser.parse_args(argv)
    if vars(args).get("_run") is None:
        parser.print_help(sys.stderr)
        return 2
    previous = warnings.formatwarning
    warnings.formatwarning = _warning_line      # "warning: <message>", no source line
    try:
        return int(args._run(args))
    except ValueError as exc:
        print(f"coxinfluence {args.command}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        warnings.formatwarning = previous


def _warning_line(message, category, filename, lineno, line=None) -> str:
    """A warning as the command line prints it while :func:`main` runs.

    :func:`main`'s ``warnings.formatwarning``: Python's ``file:line: Category:`` prefix
    and the source line are left out, the message is one line.

    Parameters
    ----------
    message : Warning or str
        The warning.
    category, filename, lineno, line : object
        What ``warnings.formatwarning`` is given (not shown).

    Returns
    -------
    str
        ``"warning: <message>\\n"``.
    """
    return "warning: " + " ".join(str(message).split()) + "\n"
