"""Workers' tests stop and start a database of their own (tests/outage.py)."""

from tests.outage import own_postgres

__all__ = ["own_postgres"]
