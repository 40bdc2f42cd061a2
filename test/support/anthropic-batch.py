"""A Message Batch through the official anthropic Python package, as its users write it: create
the batch with inline requests, poll it until it has ended, read its results and list it. Prints
what it saw as JSON for the test (test/integration/api/anthropic/anthropic-batches-python.test.ts)
to check.

usage: python anthropic-batch.py BASE_URL API_KEY
"""
import json
import sys
import time

import anthropic

base_url, api_key = sys.argv[1], sys.argv[2]
client = anthropic.Anthropic(base_url=base_url, api_key=api_key, max_retries=0)


def ask(custom_id, content):
    return {
        "custom_id": custom_id,
        "params": {
            "model": "claude-haiku",
            "max_tokens": 50,
            "messages": [{"role": "user", "content": content}],
        },
    }


created = client.messages.batches.create(
    requests=[
        ask("tide", "A haiku about the tide sim:tokens=3"),
        ask("dunes", "A haiku about dunes sim:tokens=4"),
        ask("broken", "sim:fail"),
    ]
)
batch = created
deadline = time.time() + 90
while batch.processing_status != "ended" and time.time() < deadline:
    time.sleep(0.3)
    batch = client.messages.batches.retrieve(created.id)

results = [r.model_dump(mode="json") for r in client.messages.batches.results(created.id)]
listed = [b.id for b in client.messages.batches.list(limit=10).data]
refused = None
try:
    client.messages.batches.create(requests=[ask("same", "x"), ask("same", "y")])
except anthropic.BadRequestError as err:
    refused = {"status": err.status_code, "body": err.body}

print(json.dumps({
    "created": created.model_dump(mode="json"),
    "ended": batch.model_dump(mode="json"),
    "results": results,
    "listed": created.id in listed,
    "refused": refused,
}))
