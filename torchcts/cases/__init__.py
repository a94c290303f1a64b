"""Cases: the pytest-independent case model and the sources that produce cases."""

from torchcts.cases.model import Case

__all__ = ["Case"]
