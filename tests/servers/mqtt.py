"""A subscriber on the machine's MQTT broker (Mosquitto, 127.0.0.1:1883), on a topic of its own.

The broker is shared by everyone on the machine: each test takes a fresh topic.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

BROKER = ("127.0.0.1", 1883)


class Subscriber:
    """paho-mqtt (the client Apprise's mqtt:// uses) subscribed to one new topic."""

    def __init__(self) -> None:
        import paho.mqtt.client as mqtt

        self.topic = f"butler-tests/{uuid.uuid4().hex}"
        self.payloads: list[bytes] = []
        self._subscribed = threading.Event()
        self._arrived = threading.Condition()
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self._client.on_connect = lambda client, *_: client.subscribe(self.topic, qos=1)
        self._client.on_subscribe = lambda *_: self._subscribed.set()
        self._client.on_message = self._message

    def _message(self, client: object, userdata: object, message: object) -> None:
        with self._arrived:
            self.payloads.append(message.payload)  # type: ignore[attr-defined]
            self._arrived.notify_all()

    def url(self) -> str:
        """An Apprise URL publishing to this subscriber's topic."""
        return f"mqtt://{BROKER[0]}:{BROKER[1]}/{self.topic}"

    def wait(self, count: int = 1, timeout: float = 30.0) -> list[bytes]:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.payloads) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"fewer than {count} MQTT messages within {timeout} s")
                self._arrived.wait(left)
            return list(self.payloads)

    async def until(self, count: int = 1, timeout: float = 30.0) -> list[bytes]:
        """:meth:`wait` from a test's event loop, which goes on running meanwhile."""
        return await asyncio.to_thread(self.wait, count, timeout)

    def __enter__(self) -> Subscriber:
        try:
            self._client.connect(*BROKER)
        except OSError as exc:
            pytest.fail(f"no MQTT broker on {BROKER[0]}:{BROKER[1]} ({exc}); start mosquitto")
        self._client.loop_start()
        if not self._subscribed.wait(30):
            raise TimeoutError("the MQTT subscription was not confirmed within 30 s")
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.loop_stop()
        self._client.disconnect()


@pytest.fixture
def mqtt_subscriber() -> Iterator[Subscriber]:
    with Subscriber() as subscriber:
        yield subscriber
