"""Chat channels: a person reaches the butlers from Telegram, Matrix or email.

Each channel runs inside the daemon and turns what arrives into
:class:`~butler.channels.message.Inbound` messages; the
:class:`~butler.channels.inbox.Inbox` records each once, answers only paired
senders, picks the butler (:mod:`.routing`), finds the conversation it
continues (:mod:`.threads`) and triggers that butler's spawner with source
``route``; the reply goes back to the chat it came from. Everything a sender
wrote is data for a jailed session, never an instruction to the daemon.
"""
