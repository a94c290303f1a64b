"""Imported by a forked case (tests/helpers/planted_forks.py): the next child must find it imported."""
