"""Test doubles that let the genuine agent CLIs run fully offline.

`tests.fakes.model_server.FakeModelServer` impersonates the model APIs each
CLI talks to (Anthropic Messages, OpenAI Responses, OpenAI chat completions,
Gemini), answering from a script the test sets.
"""
