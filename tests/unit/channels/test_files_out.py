"""What a file a session sends is taken for, what it is called, and where it may be."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path, PurePosixPath

import pytest

from butler.channels.files_out import MAX_CAPTION_CHARS, FileOut, caption_of, sent_name, sniffed
from butler.tools.send_file import NotSent, located, read_bounded
from tests.unit.channels.in_memory import ALICE, Desk

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("plan.png", PNG, "image/png"),
        ("plan.txt", PNG, "image/png"),  # the bytes say what it is, not the name
        ("photo.jpg", b"\xff\xd8\xff\xe0rest", "image/jpeg"),
        ("cat.webp", b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        ("cat.png", b"not a picture at all", "text/plain"),
        ("list.csv", b"a,b\n1,2\n", "text/csv"),
        ("notes.md", b"# Notes\n", "text/markdown"),
        ("report.pdf", b"%PDF-1.7\n", "application/pdf"),
        ("tool.exe", b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\xff\xff", "application/octet-stream"),
    ],
)
def test_a_files_type_is_read_from_its_bytes(name, data, expected):
    assert sniffed(name, data) == expected


def test_only_an_image_goes_as_a_picture():
    assert FileOut("a.png", "image/png", PNG).image
    assert not FileOut("a.pdf", "application/pdf", b"%PDF-").image
    assert not FileOut("a.svg", "text/plain", b"<svg/>").image  # SVG is text: a document


@pytest.mark.parametrize(
    ("path", "media_type", "expected"),
    [
        ("out/plan.png", "image/png", "plan.png"),
        ("plan.txt", "image/png", "plan.png"),
        ("data.json", "text/plain", "data.json"),
        ("page.html", "text/plain", "page.txt"),  # no page to open in a browser
        ("setup.exe", "application/octet-stream", "setup.bin"),  # no program to run
        ("photos.zip", "application/octet-stream", "photos.zip"),
        ("my report (final).pdf", "application/pdf", "my_report_final.pdf"),
        (".hidden", "text/plain", "hidden.txt"),
    ],
)
def test_the_name_sent_is_safe_and_says_what_the_bytes_are(path, media_type, expected):
    assert sent_name(path, media_type) == expected


def test_a_long_caption_is_cut_to_what_every_platform_takes():
    assert caption_of("  short  ") == "short"
    cut = caption_of("word " * 1000)
    assert len(cut) == MAX_CAPTION_CHARS and cut.endswith("…")


def test_a_path_is_read_in_the_folder_or_the_sessions_home_and_nowhere_else(tmp_path):
    folder, home = tmp_path / "butler", tmp_path / "homes" / "s1"
    assert located(folder, home, "out/a.png") == (folder, PurePosixPath("out/a.png"))
    assert located(folder, home, f"{folder}/a.png") == (folder, PurePosixPath("a.png"))
    assert located(folder, home, f"{home}/made.csv") == (home, PurePosixPath("made.csv"))
    with pytest.raises(NotSent, match="outside the session's folder and its home"):
        located(folder, home, "/etc/passwd")
    with pytest.raises(NotSent, match="outside"):
        located(folder, home, f"{tmp_path}/homes/s2/theirs.txt")  # another session's home


def test_a_read_is_bounded_follows_no_link_and_refuses_an_empty_file(tmp_path: Path):
    (tmp_path / "ok.txt").write_bytes(b"x" * 10)
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "link.txt").symlink_to(tmp_path / "ok.txt")
    assert read_bounded(tmp_path, PurePosixPath("ok.txt"), 10) == b"x" * 10
    with pytest.raises(NotSent, match="over 9 bytes"):
        read_bounded(tmp_path, PurePosixPath("ok.txt"), 9)
    with pytest.raises(NotSent, match="links are not followed"):
        read_bounded(tmp_path, PurePosixPath("link.txt"), 10)
    with pytest.raises(NotSent, match="leaves its folder"):
        read_bounded(tmp_path, PurePosixPath("../ok.txt"), 10)
    with pytest.raises(NotSent, match="is empty"):
        read_bounded(tmp_path, PurePosixPath("empty.txt"), 10)


async def test_the_inbox_knows_which_message_a_session_answers_only_while_it_runs():
    desk = Desk()
    desk.senders.pair("telegram", ALICE.sender)
    tester = desk.butlers["tester"]
    tester.hold = True
    asking = desk.receive("make me the plan as a file")
    answer = asyncio.create_task(desk.handle(asking))
    async with asyncio.timeout(10):
        while not tester.held:
            await asyncio.sleep(0)
    [(session_id, _)] = tester.held
    running = desk.inbox.answering.of_session(session_id)
    assert running is not None and running.message == asking
    assert running.conversation_id is not None
    tester.finish()
    await answer
    assert desk.inbox.answering.of_session(session_id) is None  # answered: no more files


async def test_a_channel_that_cannot_send_files_says_so_at_once_and_the_row_says_failed():
    desk = Desk()
    file = FileOut("plan.png", "image/png", PNG, "the plan")
    session_id = str(uuid.uuid4())
    why = await desk.link.send_file(
        ALICE, file, butler="tester", conversation_id=None, session_id=session_id
    )
    assert why == "telegram: this channel cannot send files"
    [row] = desk.conversations.out()
    assert (row["status"], row["body"]) == ("failed", "the plan")
    assert str(row["session_id"]) == session_id
    assert row["attachments"] == [{"name": "plan.png", "media_type": "image/png", "size": len(PNG)}]
