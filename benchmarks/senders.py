"""Who is speaking: what proving a sender and holding a session to its conversation cost.

Two figures. A tool call (``session_list``, ``state_get``) made by a session a
chat message started, which the tenancy middleware holds to its
conversation, against the same call by an owner's session, on one butler
served in this process with 200 recorded sessions of other people. And an
email's proof (a DKIM signature verified, its key asked of a DNS server on
loopback) against reading the same message without it.

    .venv/bin/python benchmarks/senders.py [--calls 60] [--mails 50] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import DEFAULT_DSN, drop_schema, elapsed_ms, median
from rows import Row, ratio_at_most, table
from toolcalls import time_calls

from butler.channels.mail_auth import prove, txt_lookup
from butler.channels.mail_format import inbound_of
from butler.store.sessions import NewSession
from tests.helpers import InProcessButler, free_port, write_butler
from tests.servers.dkim import DkimKey
from tests.servers.dns import DnsServer

TOOLS = {"session_list": {"limit": 20}, "state_get": {"key": "bench"}}
#: Other people's sessions recorded beside the measured ones.
OTHERS = 200


async def chat_root(butler, sender: str) -> uuid.UUID:
    meta = {"channel": "telegram", "sender": sender, "conversation_id": str(uuid.uuid4())}
    new = NewSession("hello", "route", "command", type="channel", metadata=meta)
    return await butler.sessions.create(new)


async def tool_rows(dsn: str, calls: int, tmp: Path) -> list[Row]:
    port = free_port()
    schema = f"bench_senders_{port}"
    folder = write_butler(tmp / "roster", "senders", port=port, schema=schema)
    rows = []
    try:
        async with InProcessButler(folder, database_url=dsn) as served:
            butler = served.butler
            for n in range(OTHERS):
                await chat_root(butler, str(2000 + n))
            tenant = await chat_root(butler, "1001")
            owner = await butler.sessions.create(NewSession("review", "schedule", "command"))
            tokens = {
                who: butler.spawner.session_tokens.issue(str(session))
                for who, session in (("tenant", tenant), ("owner", owner))
            }
            url = f"{served.url}/mcp"
            for tool, args in TOOLS.items():
                ours: list[float] = []
                ref: list[float] = []
                for _ in range(3):  # alternate, so a burst of load hits both alike
                    ours += await time_calls(url, tool, args, calls // 3, tokens["tenant"])
                    ref += await time_calls(url, tool, args, calls // 3, tokens["owner"])
                rows.append(
                    Row(
                        f"{tool} by a chat sender's session",
                        median(ours),
                        median(ref),
                        "an owner's session",
                        goal=ratio_at_most(1.3),
                        measures=f"median of {len(ours)} calls over HTTP with the session's "
                        f"token, {OTHERS + 2} sessions recorded, against the same calls "
                        "with an owner's session token, alternating rounds",
                    )
                )
    finally:
        await drop_schema(dsn, schema)
    return rows


def mail_row(mails: int) -> Row:
    key = DkimKey("home.test")
    message = EmailMessage()
    message["From"], message["To"] = "Alice <alice@home.test>", "butler@home.test"
    message["Subject"], message["Message-ID"] = "Meds", "<1@home.test>"
    message.set_content("what is due today?\n" * 20)
    raw = key.sign(bytes(message))
    proofs: list[float] = []
    reads: list[float] = []
    with DnsServer(key.records()) as dns:
        txt = txt_lookup(dns.address)
        for _ in range(mails):
            started = time.perf_counter()
            assert prove(raw, None, txt).proven
            proofs.append(elapsed_ms(started))
            started = time.perf_counter()
            inbound_of(raw, 1, "1", "butler@home.test", None)
            reads.append(elapsed_ms(started))
    return Row(
        "an email's sender proven",
        median(proofs),
        median(reads),
        "reading the message",
        measures=f"median of {mails} DKIM verifications of a 2048-bit RSA signature, the key "
        "asked each time of a DNS server on loopback, against parsing the same message "
        "into an inbound one (shown for scale: a mailbox reads a handful a minute)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--mails", type=int, default=50)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("BUTLER_DATA_DIR", str(Path(tmp) / "data"))
        os.environ.setdefault("ANTHROPIC_API_KEY", "sk-bench")  # no session is run
        rows = asyncio.run(tool_rows(args.database_url, args.calls, Path(tmp)))
    rows.append(mail_row(args.mails))
    print(table(rows, verdicts=True))


if __name__ == "__main__":
    main()
