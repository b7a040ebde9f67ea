"""The butler's dashboard: one module per view, all server-rendered, all escaped.

:mod:`~butler.dashboard.routes` assembles the views; the server imports
:func:`dashboard_routes` and :data:`SECURITY_HEADERS` from here.
"""

from butler.dashboard.render import SECURITY_HEADERS
from butler.dashboard.routes import dashboard_routes

__all__ = ["SECURITY_HEADERS", "dashboard_routes"]
