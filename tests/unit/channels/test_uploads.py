"""What a browser sends, bounded like a chat's message: text, and files by the attachment rules."""

from __future__ import annotations

import pytest

from butler.channels.attachments import AttachmentRefused
from butler.channels.uploads import Upload, check_text, max_body_bytes, media_type_of, session_files
from butler.config.channels import ChannelSettings

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 20
SETTINGS = ChannelSettings(max_attachments=2, max_attachment_bytes=1024, max_message_chars=100)


def test_a_message_is_bounded_and_never_empty():
    check_text("a" * 100, False, SETTINGS)
    check_text("", True, SETTINGS)  # files alone are a message
    with pytest.raises(AttachmentRefused, match="longer than the 100 characters"):
        check_text("a" * 101, False, SETTINGS)
    with pytest.raises(AttachmentRefused, match="empty"):
        check_text("  \n", False, SETTINGS)


def test_the_body_may_hold_the_longest_text_and_every_file_and_no_more():
    assert max_body_bytes(SETTINGS) == 100 * 4 + 2 * 1024 + 64 * 1024


def test_files_become_the_sessions_files_under_names_the_daemon_chooses():
    files = session_files(
        [
            Upload("../../etc/passwd.txt", "text/plain", b"hello\n"),
            Upload("p.png", "image/png", PNG),
        ],
        SETTINGS,
    )
    assert [f.name for f in files] == ["attachment-1.txt", "attachment-2.png"]
    assert files[0].data == b"hello\n"
    assert "sent as '../../etc/passwd.txt'" in files[0].note  # the person's name: data only


def test_a_file_the_browser_could_not_name_is_read_by_its_extension():
    assert media_type_of(Upload("notes.md", "", b"# x")) == "text/markdown"
    assert media_type_of(Upload("scan.JPEG", "application/octet-stream", b"")) == "image/jpeg"
    assert media_type_of(Upload("x.png", "image/png; charset=binary", b"")) == "image/png"
    assert media_type_of(Upload("run.sh", "", b"")) == "application/octet-stream"


@pytest.mark.parametrize(
    ("uploads", "refusal"),
    [
        ([Upload("a.txt", "text/plain", b"a")] * 3, "3 attachments is more than the 2"),
        ([Upload("big.txt", "text/plain", b"a" * 1025)], "larger than the 1 KiB"),
        ([Upload("run.sh", "text/x-sh", b"echo")], "of type text/x-sh is not accepted"),
        ([Upload("fake.png", "image/png", b"<script>")], "does not look like the image/png"),
        ([Upload("bin.txt", "text/plain", b"\xff\xfe\x00")], "does not look like the text/plain"),
        ([Upload("empty.txt", "text/plain", b"")], "the file 'empty.txt' is empty"),
    ],
)
def test_what_the_rules_refuse_is_refused_in_one_line(uploads, refusal):
    with pytest.raises(AttachmentRefused, match=refusal):
        session_files(uploads, SETTINGS)
