"""The login page: paste the owner token, or follow the link ``butler token`` prints.

:class:`~butler.security.http.RequireToken` answers it to a browser asking for
any page without a valid login cookie, and takes its form back; this module
only draws it, inside the same frame as every other page.
"""

from __future__ import annotations

from starlette.responses import Response

from butler.dashboard.render import Page, e, page
from butler.security.http import LOGIN_PATH, LoginPage


def login_page(butler: str, where: str) -> LoginPage:
    """The login page of ``butler``; ``where`` is the command that prints its token and link."""

    def render(next_path: str, error: str, status: int) -> Response:
        alert = f'<p class="error" role="alert" id="login-error">{e(error)}</p>' if error else ""
        body = (
            f'<section id="login"><h2>Log in</h2>{alert}'
            f'<form method="post" action="{LOGIN_PATH}" class="login">'
            f'<input type="hidden" name="next" value="{e(next_path)}">'
            '<label>Owner token <input type="password" name="token" id="token" required'
            ' autocomplete="current-password" autofocus maxlength="512"></label> '
            '<button type="submit">Log in</button></form>'
            f"<p><code>{e(where)}</code> prints the token and a link that logs in. "
            "A login lasts 30 days in this browser; rotating the token "
            "(<code>--rotate</code>) ends every login.</p></section>"
        )
        response = page(
            butler,
            "",
            Page(
                title=f"log in · {butler}",
                subtitle="log in",
                source="",
                body=body,
                final=True,
                views=(),
                meta="the owner's dashboard",
            ),
        )
        response.status_code = status
        return response

    return render
