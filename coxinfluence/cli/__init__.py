"""Command-line interface: ``coxinfluence <subcommand> ...`` (also ``python -m
coxinfluence`` and ``python -m coxinfluence.cli``).

Subcommands live in a registry (:mod:`coxinfluence.cli.registry`: :data:`SUBCOMMANDS`,
:class:`Subcommand`, :func:`register`); each is a module registering itself when imported:
``audit`` (:mod:`coxinfluence.cli.audit_command`: a Cox, AFT, Fine-Gray, cause-specific or
multi-state model's influential patients, an HTML report) and ``asymptotics``
(:mod:`coxinfluence.cli.asymptotics_command`: the VIF - IF gap simulated). The model
families ``audit`` fits are a table too (:mod:`coxinfluence.cli.family_registry`:
:class:`~coxinfluence.cli.family_registry.CliFamily`,
:func:`~coxinfluence.cli.family_registry.register_cli_family`): adding a family to the
command line is one entry.

``main(argv)`` returns 0 on success, 2 on invalid input (a ``ValueError`` from the
subcommand, or no subcommand; the message, naming the problem, goes to stderr); arguments
argparse cannot parse make it exit with status 2 (``SystemExit``), argparse's convention.
"""
from coxinfluence.cli import (  # noqa: F401 (registration)
    asymptotics_command,
    audit_command,
    competing_risks_families,
)
from coxinfluence.cli.registry import (
    SUBCOMMANDS,
    Subcommand,
    add_progress_argument,
    build_parser,
    main,
    register,
    show_progress,
)

__all__ = ["Subcommand", "SUBCOMMANDS", "register", "build_parser", "main",
           "add_progress_argument", "show_progress"]
