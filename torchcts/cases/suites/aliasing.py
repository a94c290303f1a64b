"""placeholder"""
from torchcts.cases.api import CaseSet

SUITE = CaseSet("operators")
