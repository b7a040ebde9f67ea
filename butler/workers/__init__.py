"""Sessions executed on other machines by ``butler worker`` (docs/scaling.md)."""
