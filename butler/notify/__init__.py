"""Reaching the person: messages sent through the owner's channels, by the daemon.

A runtime stays in its jail with no network; it calls the butler's
``notify`` tool and the daemon sends on its behalf, through Apprise, to the
channels the owner named in ``[butler.notify]``. Everything that reaches
the person goes through :meth:`Notifier.deliver`, and every attempt is
recorded (:mod:`butler.store.deliveries`).

- :mod:`.message`: the message and its bounds; :mod:`.quiet`: quiet hours;
- :mod:`.channels`: channels by name, URLs filled from the credentials store;
- :mod:`.send`: the one call into Apprise; :mod:`.attachment`: reading an attached file;
- :mod:`.notifier`: accepting a message; :mod:`.outbox`: attempts, retries, held messages.
"""

from butler.notify.channels import ChannelUnavailable, NotifyRefused
from butler.notify.message import Attachment, Message, Priority
from butler.notify.notifier import ChannelTest, Notifier
from butler.notify.send import Outcome, send

__all__ = [
    "Attachment",
    "ChannelTest",
    "ChannelUnavailable",
    "Message",
    "Notifier",
    "NotifyRefused",
    "Outcome",
    "Priority",
    "send",
]
