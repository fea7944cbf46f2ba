"""Locust profile equivalent to `turnstile load` (the classic demo).

Closed-loop users with no wait time: each user POSTs the default question to /retrieve, waits
for the whole response, and immediately sends the next one.

Run it against a turnstile server (host from --host):

    locust -f loadtest/locustfile.py --headless -u 60 -r 5 -t 60s --host http://127.0.0.1:8080

The same load with turnstile's own generator:

    turnstile load --url http://127.0.0.1:8080/retrieve --users 60 --spawn-rate 5 \
        --duration 60 --output /tmp/demo-load

Locust's default per-request timeout is unlimited; turnstile load uses 60 s (--timeout-s).
"""

from locust import HttpUser, constant, task

BODY = {"question": "How do I parse command line arguments?"}


class RetrieveUser(HttpUser):
    """One closed-loop user: POST /retrieve, wait for the answer, repeat."""

    wait_time = constant(0)

    @task
    def retrieve(self):
        self.client.post("/retrieve", json=BODY)
