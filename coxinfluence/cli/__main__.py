"""``python -m coxinfluence.cli``: the ``coxinfluence`` command."""
import sys

from coxinfluence.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
