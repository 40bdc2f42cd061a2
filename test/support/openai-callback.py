"""A video with a callback URL through the official openai Python package, as its users would name
one (`extra_body`), and the deliveries that reached the callback checked with the package's own
Standard Webhooks verification. Prints what it did as JSON for the test
(test/integration/service/webhooks/job-callbacks-python.test.ts).

usage: python openai-callback.py create BASE_URL API_KEY CALLBACK_URL
       python openai-callback.py verify DELIVERIES_JSON_FILE
  the file: {"secret": "whsec_...", "deliveries": [{"body": "...", "headers": {...}}, ...]}
"""
import json
import sys

from openai import InvalidWebhookSignatureError, OpenAI

if sys.argv[1] == "create":
    base_url, api_key, callback_url = sys.argv[2:5]
    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    video = client.videos.create(
        model="seedance-lite",
        prompt="waves sim:delay=300",
        seconds="4",
        extra_body={"callback_url": callback_url},
    )
    print(json.dumps({"id": video.id, "status": video.status}))
else:
    with open(sys.argv[2], encoding="utf-8") as f:
        given = json.load(f)
    client = OpenAI(api_key="unused", webhook_secret=given["secret"])
    seen = []
    for delivery in given["deliveries"]:
        client.webhooks.verify_signature(delivery["body"], delivery["headers"])
        try:
            client.webhooks.verify_signature(delivery["body"].replace("}", " }", 1), delivery["headers"])
            tampered_refused = False
        except InvalidWebhookSignatureError:
            tampered_refused = True
        seen.append({"event": json.loads(delivery["body"])["event"], "tampered_refused": tampered_refused})
    print(json.dumps(seen))
