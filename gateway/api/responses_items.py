"""The Responses API's `instructions` and `input` items as chat-completions `messages`.

Messages (`{"type": "message", "role", "content"}` or the easy form without `type`) keep
their role; their content parts (`input_text`, `output_text`, `input_image`) become chat
parts. A tool loop sent back — `function_call` items, then `function_call_output` items —
becomes one assistant message with `tool_calls`, then one `tool` message per output.
Everything refused is a 400 naming the Responses path (`input[3].call_id`), not the chat
field it would have become: the client only knows the request it sent.
"""

from __future__ import annotations

from typing import Any

from gateway.errors import ApiError, invalid

Message = dict[str, Any]

INPUT_ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = {"input_text": "text", "output_text": "text", "text": "text", "refusal": "refusal"}
IMAGE_DETAILS = ("auto", "low", "high")
# Why anything that points at OpenAI-side state (previous_response_id, item_reference) is
# refused rather than ignored: ignoring it answers without the earlier context.
NOT_STORED = "Switchyard does not store responses; send the whole conversation in `input`"


def to_messages(instructions: Any, items: Any) -> list[Message]:
    """`instructions` (a system message first) and `input` (a string is one user message)
    as chat messages. Raises a 400 naming `instructions` or `input[i]…`."""
    messages: list[Message] = []
    if instructions is not None:
        if not isinstance(instructions, str):
            raise invalid("`instructions` must be a string", param="instructions")
        messages.append({"role": "system", "content": instructions})
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
        return messages
    if not isinstance(items, list) or not items:
        raise invalid("`input` is required: a string or a non-empty array", param="input")
    call_ids: set[str] = set()
    for index, item in enumerate(items):
        param = f"input[{index}]"
        if not isinstance(item, dict):
            raise invalid(f"`{param}` must be an object", param=param)
        kind = item.get("type")
        if kind is not None and not isinstance(kind, str):
            raise invalid(f"`{param}.type` must be a string", param=f"{param}.type")
        if kind == "function_call":
            call = _tool_call(item, param)
            call_ids.add(call["id"])
            _append_tool_call(messages, call)
        elif kind == "function_call_output":
            messages.append(_tool_result(item, param, call_ids))
        elif kind == "reasoning":
            # A reasoning model's own summary or encrypted thought, meaningful only to the
            # model that wrote it; chat upstreams have no field for it. Clients that send
            # `response.output` back whole include these, so they are dropped, not refused.
            continue
        elif kind is None or kind == "message":
            messages.append(_message(item, param))
        else:
            raise _unsupported_item(kind, param)
    return messages


def _unsupported_item(kind: Any, param: str) -> ApiError:
    if kind == "item_reference":
        return invalid(f"`{param}`: an item_reference needs stored items; {NOT_STORED}", param)
    return invalid(
        f"`{param}`: input items of type {kind!r} are not supported; send messages, "
        "function_call and function_call_output items",
        param=f"{param}.type",
    )


def _message(item: dict[str, Any], param: str) -> Message:
    role = item.get("role")
    if role is None:
        raise invalid(
            f"`{param}` needs a `role` (a message) or a `type` such as function_call or "
            "function_call_output",
            param=param,
        )
    if role not in INPUT_ROLES:
        raise invalid(f"`{param}.role` must be one of {', '.join(INPUT_ROLES)}", f"{param}.role")
    return {"role": role, "content": _content(item.get("content"), f"{param}.content")}


def _content(content: Any, param: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(f"`{param}` must be a string or an array of content parts", param=param)
    return [_part(part, f"{param}[{index}]") for index, part in enumerate(content)]


def _part(part: Any, param: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind is not None and not isinstance(kind, str):
        raise invalid(f"`{param}.type` must be a string", param=f"{param}.type")
    if kind in TEXT_PARTS:
        field = TEXT_PARTS[kind]
        text = part.get(field)
        if not isinstance(text, str):
            raise invalid(f"`{param}.{field}` must be a string", param=f"{param}.{field}")
        return {"type": "text", "text": text}
    if kind == "input_image":
        return _image(part, param)
    if kind == "input_file":
        raise invalid(
            f"`{param}`: file inputs are not supported; send the file's text as input_text",
            param=param,
        )
    raise invalid(f"`{param}`: unsupported content part type {kind!r}", param=f"{param}.type")


def _image(part: dict[str, Any], param: str) -> dict[str, Any]:
    url = part.get("image_url")
    if url is None and part.get("file_id") is not None:
        raise invalid(
            f"`{param}.file_id`: Switchyard has no file store; send the image as `image_url` "
            "(an https URL or a base64 data: URL)",
            param=f"{param}.file_id",
        )
    if not isinstance(url, str) or not url:
        raise invalid(f"`{param}.image_url` must be a non-empty string", f"{param}.image_url")
    image: dict[str, Any] = {"url": url}
    if part.get("detail") in IMAGE_DETAILS:
        image["detail"] = part["detail"]
    return {"type": "image_url", "image_url": image}


def _tool_call(item: dict[str, Any], param: str) -> dict[str, Any]:
    call_id = _required_name(item, "call_id", param)
    name = _required_name(item, "name", param)
    arguments = item.get("arguments")
    if not isinstance(arguments, str):
        raise invalid(f"`{param}.arguments` must be a JSON string", param=f"{param}.arguments")
    # The item's own `id` (fc_…) and `status` describe the earlier response; chat needs
    # only the call id the outputs refer to.
    function = {"name": name, "arguments": arguments}
    return {"id": call_id, "type": "function", "function": function}


def _append_tool_call(messages: list[Message], call: dict[str, Any]) -> None:
    """Calls right after an assistant message (its text, or earlier calls) belong to the
    same assistant turn: chat wants them in that message's `tool_calls`."""
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":
        last.setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _tool_result(item: dict[str, Any], param: str, call_ids: set[str]) -> Message:
    call_id = _required_name(item, "call_id", param)
    if call_id not in call_ids:
        raise invalid(
            f"`{param}.call_id`: no earlier function_call item has call_id {call_id!r}; "
            "send the function_call items before their outputs",
            param=f"{param}.call_id",
        )
    output = item.get("output")
    if isinstance(output, list):
        output = [_output_part(part, f"{param}.output[{i}]") for i, part in enumerate(output)]
    elif not isinstance(output, str):
        raise invalid(f"`{param}.output` must be a string or an array", f"{param}.output")
    return {"role": "tool", "tool_call_id": call_id, "content": output}


def _output_part(part: Any, param: str) -> dict[str, Any]:
    """Chat `tool` messages carry text only, so a function's image or file output is refused."""
    if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text"):
        return _part(part, param)
    raise invalid(f"`{param}`: a function output must be text (input_text parts)", param=param)


def _required_name(item: dict[str, Any], field: str, param: str) -> str:
    value = item.get(field)
    if not isinstance(value, str) or not value:
        raise invalid(f"`{param}.{field}` must be a non-empty string", param=f"{param}.{field}")
    return value
