"""Source-grounded questions: ``butler ask`` and ``butler chat``.

:class:`~butler.subagent.runner.SubagentRunner` runs the user's chosen agent
CLI in a throwaway folder holding symlinks to configured sources and empty
MCP configs; :mod:`~butler.subagent.sources` reads the user's config and
:mod:`~butler.subagent.template` the prompt template.
"""
