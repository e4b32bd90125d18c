"""Scrapes a beacond metrics endpoint with a real HTTP client and parses each answer with
prometheus_client's text-format parser (a malformed exposition raises, and the script fails).

usage: scrape_metrics.py URL COUNT INTERVAL_S

Prints one JSON object per scrape: {"status", "content_type", "seconds" (the request's duration),
"samples": {"name{label=value,...}": value}}; NaN values are printed as the string "NaN". Then one
object {"probes": {...}} with the status of requests the endpoint must refuse.
"""

import json
import math
import sys
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def fetch(url, method="GET"):
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode("utf-8", "replace")


def flatten(text):
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{name}={value}" for name, value in sorted(sample.labels.items()))
            key = f"{sample.name}{{{labels}}}" if labels else sample.name
            value = sample.value
            samples[key] = "NaN" if isinstance(value, float) and math.isnan(value) else value
    return samples


def main():
    url, count, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    for index in range(count):
        started = time.monotonic()
        status, content_type, body = fetch(url)
        seconds = time.monotonic() - started
        samples = flatten(body) if status == 200 else {}
        print(json.dumps({"status": status, "content_type": content_type, "seconds": seconds, "samples": samples}))
        sys.stdout.flush()
        if index + 1 < count:
            time.sleep(interval)
    base = url.rsplit("/", 1)[0]
    probes = {
        "GET /": fetch(base + "/")[0],
        "GET /metricsx": fetch(base + "/metricsx")[0],
        "POST /metrics": fetch(url, method="POST")[0],
        "DELETE /metrics": fetch(url, method="DELETE")[0],
        "GET /metrics?x=1": fetch(url + "?x=1")[0],
    }
    print(json.dumps({"probes": probes}))


if __name__ == "__main__":
    main()
