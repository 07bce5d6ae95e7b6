"""Validation of Responses bodies and streamed events against the Open Responses OpenAPI schemas
(../shared/specs/openresponses-openapi.json), shared by the SSE and WebSocket tests."""
import json
import re
from pathlib import Path

import jsonschema

SPEC = Path(__file__).resolve().parents[3] / "shared" / "specs" / "openresponses-openapi.json"
_spec = json.loads(SPEC.read_text())
_components = _spec["components"]["schemas"]
# Each streaming event's schema by its `type` value.
EVENT_SCHEMAS = {
    s["properties"]["type"]["enum"][0]: name
    for name, s in _components.items()
    if name.endswith("StreamingEvent") and "enum" in s.get("properties", {}).get("type", {})
}


def validator(name):
    return jsonschema.Draft202012Validator({"$ref": f"#/components/schemas/{name}",
                                           "components": _spec["components"]})


def validate(obj, name):
    errors = sorted(validator(name).iter_errors(obj), key=lambda e: e.path)
    assert not errors, f"{name}: {errors[0].message} at {list(errors[0].path)}"


def validate_event(event):
    assert event["type"] in EVENT_SCHEMAS, f"no schema for event {event['type']}"
    validate(event, EVENT_SCHEMAS[event["type"]])


ITEM = r"( response\.output_item\.added( response\.content_part\.added( response\.(output_text|" \
       r"reasoning)\.delta)* response\.(output_text|reasoning)\.done response\.content_part\.done|" \
       r"( response\.function_call_arguments\.delta)* response\.function_call_arguments\.done)" \
       r" response\.output_item\.done)"
ORDER = re.compile(r"response\.created response\.in_progress" + ITEM +
                   r"* response\.(completed|incomplete|failed)")


def check_stream(events):
    """Every event valid, sequence numbers 0, 1, ..., and the order the API defines."""
    for e in events:
        validate_event(e)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    kinds = " ".join(e["type"] for e in events)
    assert ORDER.fullmatch(kinds), kinds
    validate(events[-1]["response"], "ResponseResource")
