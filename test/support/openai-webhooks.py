"""Webhook deliveries through the official openai Python package, as its users receive them:
client.webhooks.unwrap(body, headers, secret=...) verifies the Standard Webhooks signature and
parses OpenAI's event object. Prints, for each delivery, what the package made of it (and whether a
tampered copy was refused) as JSON for the test (test/integration/service/webhooks/webhooks-openai.test.ts).

usage: python openai-webhooks.py DELIVERIES_JSON_FILE
  the file: {"secret": "whsec_...", "deliveries": [{"body": "...", "headers": {...}}, ...]}
"""
import json
import sys

from openai import InvalidWebhookSignatureError, OpenAI

with open(sys.argv[1], encoding="utf-8") as f:
    given = json.load(f)
client = OpenAI(api_key="unused", webhook_secret=given["secret"])

seen = []
for delivery in given["deliveries"]:
    event = client.webhooks.unwrap(delivery["body"], delivery["headers"])
    try:
        client.webhooks.unwrap(delivery["body"].replace('"data"', '"data" ', 1), delivery["headers"])
        tampered_refused = False
    except InvalidWebhookSignatureError:
        tampered_refused = True
    seen.append({
        "class": type(event).__name__,
        "id": event.id,
        "type": event.type,
        "created_at": event.created_at,
        "data_id": event.data.id,
        "tampered_refused": tampered_refused,
    })
print(json.dumps(seen))
