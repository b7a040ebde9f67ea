"""The butler's dashboard: one module per view, all server-rendered, all escaped.

:mod:`~butler.dashboard.routes` assembles the views; the server imports it at the
first request for a page (not at start), and :data:`SECURITY_HEADERS` from
:mod:`~butler.dashboard.render`.
"""

from butler.dashboard.render import SECURITY_HEADERS

__all__ = ["SECURITY_HEADERS"]
