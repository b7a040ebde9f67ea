"""The URL ``butler worker --init-role`` prints: the daemons' URL with the worker's role
and password in place of theirs, everything else as given."""

from __future__ import annotations

import pytest

from butler.errors import UserError
from butler.store.worker_role import check_role_name, worker_url


def test_the_workers_url_keeps_host_database_and_options_and_swaps_the_user():
    url = worker_url(
        "postgresql://admin:s3cret@db.lan:6432/butler?sslmode=require", "worker_gpu1", "pw"
    )
    assert url == "postgresql://worker_gpu1:pw@db.lan:6432/butler?sslmode=require"


def test_a_user_or_password_given_as_a_query_parameter_is_dropped():
    url = worker_url("postgres://db.lan/butler?user=admin&password=x&connect_timeout=5", "w", "p")
    assert url == "postgres://w:p@db.lan/butler?connect_timeout=5"


def test_a_unix_socket_url_keeps_its_socket_folder():
    url = worker_url("postgresql://postgres@/postgres?host=/tmp/pg/sockets", "w", "p")
    assert url == "postgresql://w:p@/postgres?host=/tmp/pg/sockets"


def test_a_password_with_url_characters_is_escaped():
    assert worker_url("postgresql://db/b", "w", "a/b@c:d") == "postgresql://w:a%2Fb%40c%3Ad@db/b"


def test_a_url_that_is_not_postgresql_is_refused_in_one_line():
    with pytest.raises(UserError, match="postgresql://"):
        worker_url("mysql://db/b", "w", "p")


@pytest.mark.parametrize("name", ["Worker", "1worker", "pg_worker", "butler_worker", "w-1", ""])
def test_a_role_name_postgresql_would_need_quoted_or_keeps_for_itself_is_refused(name):
    with pytest.raises(UserError, match=r"e\.g\. worker_gpu1"):
        check_role_name(name)


def test_a_plain_role_name_is_taken():
    assert check_role_name("worker_gpu1") == "worker_gpu1"
