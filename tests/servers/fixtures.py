"""The real servers' fixtures, as a pytest plugin every test package can use.

Loaded by the top-level conftest (``pytest_plugins``), like ``tests.fakes.fixtures``.
"""

from tests.servers.mail import mail_server
from tests.servers.mqtt import mqtt_subscriber
from tests.servers.synapse import synapse
from tests.servers.webhook import webhook

__all__ = ["mail_server", "mqtt_subscriber", "synapse", "webhook"]
