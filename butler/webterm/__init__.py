"""A builder's terminal in the browser: xterm.js over a WebSocket to a tmux client on a pty.

:mod:`.pty` runs the tmux client, :mod:`.endpoint` is the WebSocket at
``/sessions/<id>/terminal`` and :mod:`.panel` the piece of the builder's
detail page that holds the terminal, with its vendored xterm.js assets.
"""
