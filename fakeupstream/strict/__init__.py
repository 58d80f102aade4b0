"""Request validation: the fake refuses what the real APIs refuse, so that a translation bug
in the gateway fails a test instead of being absorbed by a lenient fake. Anthropic's
Messages API (anthropic.py: `check_messages`, `check_count_tokens`) and OpenAI's chat
completions (openai.py: `check_chat`), over what both share (shapes.py). Each raises
`BadRequest` naming the field in the provider's words; the route answers 400 in the
provider's shape."""

from fakeupstream.strict.anthropic import MESSAGES_FIELDS, check_count_tokens, check_messages
from fakeupstream.strict.openai import check_chat

__all__ = ["MESSAGES_FIELDS", "check_chat", "check_count_tokens", "check_messages"]
