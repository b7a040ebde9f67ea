"""A DNS server on loopback that answers TXT questions from a dict (dnspython's codec, UDP).

It stands for the internet's DNS where the test publishes a domain's DKIM
key or DMARC record; the daemon asks it through the owner's ``resolver``
setting, as it would ask a resolver on the owner's machine.

    with DnsServer({"mail._domainkey.home.test": b"v=DKIM1; k=rsa; p=..."}) as dns:
        dns.address          # "127.0.0.1:PORT", for [butler.channels.email] resolver
        dns.asked            # every name asked, in order
"""

from __future__ import annotations

import socket
import threading

import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class DnsServer:
    """Answers ``records`` (name -> TXT value) over UDP until stopped."""

    def __init__(self, records: dict[str, bytes] | None = None) -> None:
        self.records = {name.lower().rstrip("."): value for name, value in (records or {}).items()}
        self.asked: list[str] = []
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="test-dns", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._socket.getsockname()
        return f"{host}:{port}"

    def publish(self, records: dict[str, bytes]) -> None:
        self.records.update({name.lower().rstrip("."): v for name, v in records.items()})

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                data, client = self._socket.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                query = dns.message.from_wire(data)
            except dns.exception.DNSException:
                continue
            self._socket.sendto(self._answer(query).to_wire(), client)

    def _answer(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text().lower().rstrip(".")
        self.asked.append(name)
        value = self.records.get(name)
        if value is None:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.TXT:
            # A TXT string holds at most 255 bytes: a long key is split, as zone files do.
            chunks = " ".join(
                '"' + value[i : i + 255].decode("ascii") + '"' for i in range(0, len(value), 255)
            )
            answer = dns.rrset.from_text(question.name, 60, dns.rdataclass.IN, "TXT", chunks)
            response.answer.append(answer)
        return response

    def __enter__(self) -> DnsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join(5)
        self._socket.close()
