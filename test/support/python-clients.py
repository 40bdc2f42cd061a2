"""The official Python clients, unmodified, against the service: `openai` (chat completions whole
and streamed, structured output parsed into a Pydantic model, a required tool call, a Responses
second turn, a 402) and `anthropic` (messages whole and streamed, a tool use and its result, a
402 billing_error). Prints one JSON object: what each call told the client, for the test to hold
against the ledger.

Usage: python python-clients.py BASE_URL KEY POOR_KEY
"""

import json
import sys

import anthropic
import openai
from pydantic import BaseModel

base, key, poor = sys.argv[1], sys.argv[2], sys.argv[3]
out: dict = {}


class Recipe(BaseModel):
    title: str
    minutes: int
    steps: list[str]


weather_fn = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}

oa = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
whole = oa.chat.completions.create(
    model="claude-haiku",
    messages=[{"role": "user", "content": "hello sim:tokens=7"}],
    max_tokens=100,
)
out["openai_whole"] = {
    "id": whole.id,
    "text": whole.choices[0].message.content,
    "tokens": whole.usage.completion_tokens,
}

stream = oa.chat.completions.create(
    model="claude-haiku",
    messages=[{"role": "user", "content": "tell me sim:tokens=6"}],
    stream=True,
    stream_options={"include_usage": True},
)
text, usage, stream_id = "", None, None
for chunk in stream:
    stream_id = chunk.id
    if chunk.choices and chunk.choices[0].delta.content:
        text += chunk.choices[0].delta.content
    if chunk.usage:
        usage = chunk.usage.completion_tokens
out["openai_stream"] = {"id": stream_id, "text": text, "tokens": usage}

parsed = oa.chat.completions.parse(
    model="claude-haiku",
    messages=[{"role": "user", "content": "A soup recipe"}],
    response_format=Recipe,
)
out["openai_parsed"] = {
    "id": parsed.id,
    "recipe": parsed.choices[0].message.parsed.model_dump(),
    "tokens": parsed.usage.completion_tokens,
}

called = oa.chat.completions.create(
    model="claude-haiku",
    messages=[{"role": "user", "content": "Weather in Paris?"}],
    tools=[weather_fn],
    tool_choice="required",
)
call = called.choices[0].message.tool_calls[0]
out["openai_tool"] = {
    "id": called.id,
    "finish_reason": called.choices[0].finish_reason,
    "name": call.function.name,
    "arguments": json.loads(call.function.arguments),
    "tokens": called.usage.completion_tokens,
}

first = oa.responses.create(model="claude-haiku", input="Name a colour sim:tokens=3")
second = oa.responses.create(
    model="claude-haiku",
    previous_response_id=first.id,
    input="And another sim:tokens=4",
)
out["openai_responses"] = [
    {"id": r.id, "text": r.output_text, "tokens": r.usage.output_tokens}
    for r in (first, second)
]

try:
    openai.OpenAI(base_url=f"{base}/v1", api_key=poor, max_retries=0).chat.completions.create(
        model="claude-haiku", messages=[{"role": "user", "content": "hi"}]
    )
    out["openai_402"] = None
except openai.APIStatusError as err:
    out["openai_402"] = {"status": err.status_code, "body": err.body}

an = anthropic.Anthropic(base_url=base, api_key=key, max_retries=0)
message = an.messages.create(
    model="claude-haiku",
    max_tokens=100,
    system="Be brief.",
    messages=[{"role": "user", "content": "hello sim:tokens=5"}],
)
out["anthropic_whole"] = {
    "id": message.id,
    "stop_reason": message.stop_reason,
    "text": message.content[0].text,
    "tokens": message.usage.output_tokens,
}

events = []
with an.messages.stream(
    model="claude-haiku",
    max_tokens=100,
    messages=[{"role": "user", "content": "tell me sim:tokens=4"}],
) as s:
    for event in s:
        events.append(event.type)
    final = s.get_final_message()
out["anthropic_stream"] = {
    "id": final.id,
    "events": events,
    "text": final.content[0].text,
    "tokens": final.usage.output_tokens,
}

tools = [
    {
        "name": "get_weather",
        "description": "The weather in a city",
        "input_schema": weather_fn["function"]["parameters"],
    }
]
asked = an.messages.create(
    model="claude-haiku",
    max_tokens=200,
    tools=tools,
    messages=[{"role": "user", "content": "Use get_weather for Oslo"}],
)
use = next(b for b in asked.content if b.type == "tool_use")
answered = an.messages.create(
    model="claude-haiku",
    max_tokens=200,
    tools=tools,
    messages=[
        {"role": "user", "content": "Use get_weather for Oslo"},
        {"role": "assistant", "content": [b.model_dump() for b in asked.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "3 °C"}],
        },
    ],
)
out["anthropic_tools"] = [
    {
        "id": asked.id,
        "stop_reason": asked.stop_reason,
        "name": use.name,
        "input": use.input,
        "tokens": asked.usage.output_tokens,
    },
    {
        "id": answered.id,
        "stop_reason": answered.stop_reason,
        "types": [b.type for b in answered.content],
        "tokens": answered.usage.output_tokens,
    },
]

try:
    anthropic.Anthropic(base_url=base, api_key=poor, max_retries=0).messages.create(
        model="claude-haiku", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    )
    out["anthropic_402"] = None
except anthropic.APIStatusError as err:
    out["anthropic_402"] = {"status": err.status_code, "body": err.body}

print(json.dumps(out))
