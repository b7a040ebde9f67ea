"""Builders: work delegated to an interactive agent runtime in its own git worktree.

``butler builders spawn`` asks a running butler to create one. A builder is a session
row (``type`` = spec, task, protocol or shell), a branch ``builder/<id>``, a
worktree ``<repo>/.builders/<id>`` and a detached tmux session running the
butler's runtime in interactive mode, locked down to the butler's own MCP
server exactly like a triggered session.
"""
