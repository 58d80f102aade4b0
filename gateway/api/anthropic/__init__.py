"""Anthropic's Messages API on the gateway (SPEC R-API-9; docs/anthropic.md): `POST
/v1/messages` (`messages.py`) and `/v1/messages/count_tokens` (`count_tokens.py`), a
Messages request read as a chat-completions body (`request.py`, with `blocks.py` and
`tools.py`), and the answer written back as a `message` or its event stream
(`response.py`, `stream.py`)."""
