"""The templates of the mixed sample (bench/sample_requests.py) that ask for more than
text back: function tools (with the agent loop's second call now and then) and structured
output (a JSON schema, or JSON mode)."""

from __future__ import annotations

import json
import random
from typing import Any

from bench.sample_chat import FACTUAL_FILLERS
from bench.sample_text import PROSE_FILLERS, Body, pick, system, user

# --- tools, structured output --------------------------------------------------------------

TOOL_SPECS = (
    ("get_weather", "Current weather for a city", {"city": "string"}),
    ("search_web", "Search the web", {"query": "string"}),
    ("get_order_status", "Status of an order", {"order_id": "string"}),
    ("create_calendar_event", "Create an event", {"title": "string", "start": "string"}),
    ("send_email", "Send an email", {"to": "string", "subject": "string", "body": "string"}),
    ("lookup_customer", "Find a customer by email", {"email": "string"}),
    ("convert_currency", "Convert an amount", {"amount": "number", "to": "string"}),
    ("book_table", "Book a restaurant table", {"restaurant": "string", "people": "integer"}),
    ("get_stock_price", "Latest price of a ticker", {"ticker": "string"}),
    ("create_ticket", "Open a support ticket", {"summary": "string", "priority": "string"}),
)
TOOL_ASKS = (
    "What's the weather in {city} tomorrow?",
    "Where is my order {order}?",
    "Book a table for {people} at Casa Nova tonight.",
    "How much is 250 EUR in {currency}?",
    "Put a meeting with {name} in my calendar for Friday 3pm.",
    "Email {name} that the report is late and open a ticket for it.",
    "Find the customer marta@example.com and tell me their last order.",
)


def _tools(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "required": list(params),
                    "properties": {p: {"type": t} for p, t in params.items()},
                },
            },
        }
        for name, description, params in rng.sample(TOOL_SPECS, count)
    ]


def build_tools(rng: random.Random, low: int, high: int) -> Body:
    tools = _tools(rng, rng.randint(low, high))
    text = pick(
        rng,
        TOOL_ASKS,
        city=FACTUAL_FILLERS["city"],
        order=("A-10293", "778120"),
        people=("2", "4", "6"),
        currency=("USD", "PLN", "CHF"),
        name=PROSE_FILLERS["name"],
    )
    messages = [*system(rng, ("none", "short", "rules")), user(text)]
    if rng.random() < 0.4:  # the agent loop's second call: the tool result is back
        call_id = f"call_{rng.randrange(16**8):08x}"
        call = {"name": tools[0]["function"]["name"], "arguments": json.dumps({"query": text})}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": call}],
            }
        )
        result = {"status": "ok", "items": [{"title": f"Result {i}"} for i in range(3)]}
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})
    return {"messages": messages, "tools": tools}


SCHEMAS = (
    ("invoice", {"number": "string", "total": "number", "due": "string"}),
    ("contact", {"name": "string", "email": "string", "company": "string"}),
    ("sentiment", {"label": "string", "score": "number"}),
    ("ticket_triage", {"category": "string", "priority": "string", "summary": "string"}),
)
EXTRACT_ASKS = (
    "Extract the fields from this message:\n\n{text}",
    "Classify this review: {text}",
    "Pull out the contact details: {text}",
    "Triage this support request:\n{text}",
)
EXTRACT_TEXTS = (
    "Invoice 2025-118 from Atelier Rui, total 1,240.00 EUR, payable by 30 June.",
    "Loved the blender but the lid cracked after a week. Support was quick though.",
    "Hi, this is Sanne de Vries from Hollandia Foods, reach me at sanne@hollandia.example.",
    "Our dashboard shows no data since 8am and the export button does nothing.",
    "Rechnung Nr. 88/2025, Gesamtbetrag 312,50 EUR, fällig am 15. Juli.",
    "Terrible hotel, the room smelled of smoke and nobody at reception cared.",
    "Tomasz Nowak, CFO at Wisła Logistics, tomasz.nowak@wisla.example, +48 22 555 0101.",
    "I was charged twice for my March subscription, please refund one of them.",
)


def build_json_schema(rng: random.Random) -> Body:
    name, fields = rng.choice(SCHEMAS)
    text = rng.choice(EXTRACT_ASKS).replace("{text}", rng.choice(EXTRACT_TEXTS))
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": list(fields),
        "properties": {f: {"type": t} for f, t in fields.items()},
    }
    if rng.random() < 0.2:  # JSON mode without a schema
        response_format: dict[str, Any] = {"type": "json_object"}
    else:
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": schema},
        }
    return {
        "messages": [*system(rng, ("none", "short")), user(text)],
        "response_format": response_format,
    }
