"""``python -m coxinfluence``: the ``coxinfluence`` command (:mod:`coxinfluence.cli`)."""
import sys

from coxinfluence.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
