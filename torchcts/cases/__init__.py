"""Cases: the pytest-independent case model and the sources that produce cases."""

from torchcts.model.case import Case

__all__ = ["Case"]
