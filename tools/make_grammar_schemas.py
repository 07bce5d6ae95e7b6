#!/usr/bin/env python3
"""Generates varied JSON Schemas (deterministic seed) covering every keyword the grammar engine
supports, alone and combined, plus schemas it must refuse (with the keyword the error must name).

Used by tests/grammar/check_schemas.py; run directly to print the schemas, one per line:
    python3 tools/make_grammar_schemas.py [--seed 1] [--count 220]
"""
import argparse
import json
import random

PATTERNS = [r"^[a-z]{2,6}$", r"^\d{3}-\d{4}$", r"^[A-Z][a-z]+( [A-Z][a-z]+)?$",
            r"(foo|bar)+baz?", r"^[^\s\"]{1,8}$", r"^#[0-9a-fA-F]{6}$", r"\w+@\w+\.(com|org)",
            r"^v\d+\.\d+(\.\d+)?$", r"^(\+|-)?[0-9]{1,4}$", r"^[\u00e0-\u00ff]{1,3}$",
            r"^\\[nt]+$", r"^a\"b.c$", r"^.{2,4}$"]
FORMATS = ["date", "time", "date-time", "uuid", "email", "ipv4"]
LATER_FORMATS = ["uri", "ipv6"]  # appended after the random schemas, which keep their walks
WORDS = ["id", "name", "count", "tags", "kind", "value", "meta", "items", "flag", "note", "when",
         "score", "level", "city", "é", "a b", "x/y", "path~1"]
ANNOTATIONS = [{"title": "T"}, {"description": "A field."}, {"default": None},
               {"examples": [1]}, {"$comment": "c"}]

# Schemas the compiler must refuse, each with a word its error message must contain.
UNSUPPORTED = [
    ({"type": "number", "multipleOf": 2}, "multipleOf"),
    ({"type": "object", "patternProperties": {"^x": {}}}, "patternProperties"),
    ({"type": "object", "minProperties": 1}, "minProperties"),
    ({"type": "object", "maxProperties": 3}, "maxProperties"),
    ({"type": "array", "uniqueItems": True}, "uniqueItems"),
    ({"type": "array", "contains": {"type": "integer"}}, "contains"),
    ({"not": {"type": "string"}}, "not"),
    ({"if": {"type": "string"}, "then": {"minLength": 1}}, "if"),
    ({"type": "object", "propertyNames": {"maxLength": 3}}, "propertyNames"),
    ({"type": "object", "dependentRequired": {"a": ["b"]}}, "dependentRequired"),
    ({"type": "object", "unevaluatedProperties": False}, "unevaluatedProperties"),
    ({"type": "object", "properties": {"x": {"type": "string", "contentEncoding": "base64"}}},
     "contentEncoding"),
    ({"type": "string", "format": "hostname"}, "hostname"),
    ({"type": "number", "minimum": 1e300}, "minimum"),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, "oneOf"),
    ({"$ref": "https://example.com/s.json"}, "local"),
    ({"type": "string", "pattern": "(a)\\1"}, "backreferences"),
    ({"type": "array", "items": [{"type": "string"}]}, "prefixItems"),
]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def annotate(self, s):
        if self.r.random() < 0.15:
            s.update(self.r.choice(ANNOTATIONS))
        return s

    def string(self):
        r = self.r
        k = r.randrange(6)
        if k == 0:
            return {"type": "string"}
        if k == 1:
            lo = r.randrange(0, 4)
            return {"type": "string", "minLength": lo, "maxLength": lo + r.randrange(0, 6)}
        if k == 2:
            return {"type": "string", "pattern": r.choice(PATTERNS)}
        if k == 3:
            return {"type": "string", "format": r.choice(FORMATS)}
        if k == 4:
            return {"type": "string", "maxLength": r.randrange(1, 12)}
        return {"type": "string", "minLength": r.randrange(1, 5)}

    def integer(self):
        r = self.r
        s = {"type": "integer"}
        lo = r.choice([None, -1000, -17, -1, 0, 1, 9, 10, 99, 250, 12345])
        hi = r.choice([None, -5, 0, 7, 10, 99, 100, 999, 65535, 10 ** 12])
        if lo is not None and hi is not None and lo > hi:
            lo, hi = hi, lo
        if lo is not None:
            s["exclusiveMinimum" if r.random() < 0.25 else "minimum"] = lo
        if hi is not None:
            s["exclusiveMaximum" if r.random() < 0.25 else "maximum"] = hi
        if "exclusiveMinimum" in s and "exclusiveMaximum" in s and \
                s["exclusiveMaximum"] - s["exclusiveMinimum"] < 2:
            del s["exclusiveMaximum"]
        if "minimum" in s and "exclusiveMaximum" in s and s["exclusiveMaximum"] <= s["minimum"]:
            del s["exclusiveMaximum"]
        if "exclusiveMinimum" in s and "maximum" in s and s["maximum"] <= s["exclusiveMinimum"]:
            del s["maximum"]
        if r.random() < 0.1:  # float bounds on integers
            s = {"type": "integer", "minimum": -2.5, "maximum": 7.5}
        return s

    def scalar(self):
        r = self.r
        k = r.randrange(9)
        if k in (0, 1):
            return self.string()
        if k in (2, 3):
            return self.integer()
        if k == 4:
            return {"type": "number"}
        if k == 5:
            return {"type": "boolean"}
        if k == 6:
            return {"type": "null"}
        if k == 7:
            vals = r.sample(["red", "green", "blue", 1, 2.5, True, None, "é\"x", [1, "a"],
                             {"k": "v"}], r.randrange(1, 5))
            return {"enum": vals}
        return {"const": r.choice(["fixed", 42, False, None, {"a": [1, 2]}])}

    def obj(self, depth):
        r = self.r
        names = r.sample(WORDS, r.randrange(1, 6))
        props = {n: self.any(depth + 1) for n in names}
        s = {"type": "object", "properties": props}
        req = [n for n in names if r.random() < 0.5]
        if req:
            s["required"] = req
        k = r.randrange(5)
        if k == 1:
            s["additionalProperties"] = False
        elif k == 2:
            s["additionalProperties"] = True
        elif k == 3:
            s["additionalProperties"] = self.scalar()
        if r.random() < 0.1:
            s.pop("type")
        return s

    def array(self, depth):
        r = self.r
        k = r.randrange(4)
        if k == 0:
            s = {"type": "array", "items": self.any(depth + 1)}
        elif k == 1:
            s = {"type": "array", "prefixItems": [self.any(depth + 1)
                                                  for _ in range(r.randrange(1, 4))]}
            if r.random() < 0.5:
                s["items"] = r.choice([False, self.scalar()])
        elif k == 2:
            s = {"type": "array"}
        else:
            s = {"type": "array", "items": self.scalar()}
        if r.random() < 0.6:
            lo = r.randrange(0, 3)
            s["minItems"] = lo
            if r.random() < 0.7:
                s["maxItems"] = lo + r.randrange(0, 4)
        n_prefix = len(s.get("prefixItems", []))
        if "prefixItems" in s and s.get("items", False) is False and "items" in s:
            s["minItems"] = min(s.get("minItems", 0), n_prefix)
        return s

    def one_of(self, depth):
        r = self.r
        if r.random() < 0.5:
            types = r.sample(["string", "integer", "boolean", "null", "object", "array"],
                             r.randrange(2, 4))
            branch = {"string": self.string, "integer": self.integer,
                      "boolean": lambda: {"type": "boolean"}, "null": lambda: {"type": "null"},
                      "object": lambda: self.obj(depth + 1), "array": lambda: self.array(depth + 1)}
            out = []
            for t in types:
                b = branch[t]()
                b["type"] = t
                out.append(b)
            return {"oneOf": out}
        kinds = r.sample(["circle", "square", "line", "dot"], r.randrange(2, 4))
        return {"oneOf": [{"type": "object",
                           "properties": {"kind": {"const": k}, "size": self.scalar()},
                           "required": ["kind"]} for k in kinds]}

    def any(self, depth=0):
        r = self.r
        if depth >= 3:
            return self.annotate(self.scalar())
        k = r.randrange(12)
        if k < 4:
            s = self.scalar()
        elif k < 6:
            s = self.obj(depth)
        elif k < 8:
            s = self.array(depth)
        elif k == 8:
            s = {"anyOf": [self.any(depth + 1) for _ in range(r.randrange(2, 4))]}
        elif k == 9:
            s = self.one_of(depth)
        elif k == 10:
            s = {"type": r.sample(["string", "integer", "null", "boolean", "array"], 2)}
            if "string" in s["type"] and r.random() < 0.5:
                s["maxLength"] = 4
            if "integer" in s["type"] and r.random() < 0.5:
                s["minimum"] = 3
        else:
            a = self.obj(depth)
            b = {"properties": {"extra_" + n: self.scalar() for n in r.sample(WORDS, 2)}}
            if r.random() < 0.5:
                b["required"] = list(b["properties"])[:1]
            a.pop("additionalProperties", None)
            s = {"allOf": [a, b]}
        return self.annotate(s)

    def with_defs(self):
        r = self.r
        k = r.randrange(3)
        if k == 0:  # a recursive tree
            return {"$defs": {"node": {"type": "object", "properties": {
                "value": self.scalar(),
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"},
                             "maxItems": 3}}, "required": ["value"]}},
                    "$ref": "#/$defs/node"}
        if k == 1:  # a linked list through the root
            return {"type": "object", "properties": {"head": self.scalar(), "tail": {"$ref": "#"}},
                    "required": ["head"]}
        shared = self.any(1)
        return {"type": "object", "definitions": {"shared": shared},
                "properties": {"a": {"$ref": "#/definitions/shared"},
                               "b": {"type": "array", "items": {"$ref": "#/definitions/shared"}}},
                "required": ["a"]}


def tool_schema():
    """A typical function-calling parameter schema."""
    return {"type": "object", "properties": {
        "location": {"type": "string", "description": "City and country, e.g. Paris, France"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "include_hourly": {"type": "boolean"},
        "fields": {"type": "array", "items": {"type": "string", "enum": ["temp", "wind", "rain"]},
                   "maxItems": 3}},
        "required": ["location", "unit"], "additionalProperties": False}


# Bounded numbers as tools declare them (probabilities, coordinates, sizes), appended after the
# random schemas (with LATER_FORMATS) so that those keep their walks.
NUMBER_BOUNDS = [{"minimum": 0, "maximum": 1}, {"minimum": 0, "maximum": 2},
                 {"exclusiveMinimum": 0}, {"minimum": -90, "maximum": 90},
                 {"minimum": -180, "exclusiveMaximum": 180}, {"minimum": 0.5, "maximum": 0.75},
                 {"exclusiveMinimum": -0.05, "exclusiveMaximum": 0.05}, {"maximum": -2.5},
                 {"minimum": 2.75, "exclusiveMaximum": 100}, {"minimum": 1e-3, "maximum": 1e6}]


def generate(seed=1, count=220):
    g = Gen(seed)
    out = [tool_schema(), {"type": "object"}, {"$schema":
                                               "https://json-schema.org/draft/2020-12/schema"}]
    while len(out) < count:
        out.append(g.with_defs() if g.r.random() < 0.15 else g.any(0))
    return out + [dict({"type": "number"}, **b) for b in NUMBER_BOUNDS] + \
        [{"type": "string", "format": f} for f in LATER_FORMATS]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=220)
    args = ap.parse_args()
    for s in generate(args.seed, args.count):
        print(json.dumps(s, ensure_ascii=False))


if __name__ == "__main__":
    main()
