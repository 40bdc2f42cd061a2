"""A batch through the official openai Python package, as its users write it: upload a JSONL file,
create the batch, poll it to an end, download the output and error files. Prints what it saw as
JSON for the test (test/integration/api/group-b/batches-python.test.ts) to check.

usage: python openai-batch.py BASE_URL API_KEY
"""
import io
import json
import sys
import time

from openai import OpenAI

base_url, api_key = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0)

lines = [
    {"custom_id": "tide", "method": "POST", "url": "/v1/chat/completions",
     "body": {"model": "claude-haiku", "messages": [{"role": "user", "content": "A haiku about the tide sim:tokens=3"}], "max_tokens": 50}},
    {"custom_id": "dunes", "method": "POST", "url": "/v1/chat/completions",
     "body": {"model": "claude-haiku", "messages": [{"role": "user", "content": "A haiku about dunes sim:tokens=3"}], "max_tokens": 50}},
    {"custom_id": "broken", "method": "POST", "url": "/v1/chat/completions",
     "body": {"model": "claude-haiku", "messages": [{"role": "user", "content": "sim:fail"}], "max_tokens": 50}},
]
data = "".join(json.dumps(line) + "\n" for line in lines).encode()
uploaded = client.files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
batch = client.batches.create(
    input_file_id=uploaded.id,
    endpoint="/v1/chat/completions",
    completion_window="24h",
    metadata={"client": "python"},
)
created_status = batch.status
deadline = time.time() + 90
while batch.status not in ("completed", "failed", "cancelled", "expired") and time.time() < deadline:
    time.sleep(0.3)
    batch = client.batches.retrieve(batch.id)


def parse(file_id):
    if file_id is None:
        return []
    text = client.files.content(file_id).text
    return [json.loads(line) for line in text.splitlines() if line]


listed = [b.id for b in client.batches.list(limit=10).data]
print(json.dumps({
    "file": {"id": uploaded.id, "purpose": uploaded.purpose, "bytes": uploaded.bytes},
    "created_status": created_status,
    "batch": {
        "id": batch.id,
        "status": batch.status,
        "endpoint": batch.endpoint,
        "metadata": batch.metadata,
        "request_counts": batch.request_counts.model_dump() if batch.request_counts else None,
    },
    "listed": batch.id in listed,
    "output": parse(batch.output_file_id),
    "errors": parse(batch.error_file_id),
}))
