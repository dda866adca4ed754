#!/usr/bin/env python3
"""check_schema.py: validates every line of pinshim logs against the log format's JSON Schema,
for the tests (standard library only, so it implements the keywords the schema uses: type,
properties, required, additionalProperties, items, enum, const, minimum, pattern, allOf,
if/then, $ref to #/$defs/...; an unknown keyword is an error, so the schema cannot silently use
one this checker ignores).

usage: check_schema.py SCHEMA LOG...            exit 0 if every line is valid, 1 otherwise
       check_schema.py --invalid SCHEMA LOG...  exit 0 if every non-blank line is invalid"""
import json
import re
import sys

KNOWN = {"$schema", "$id", "$defs", "$ref", "title", "description", "type", "properties", "required",
         "additionalProperties", "items", "enum", "const", "minimum", "pattern", "allOf", "if", "then"}
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def type_ok(value, name):
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[name])


def errors(value, schema, root, path="$"):
    """The reasons value does not match schema (empty when it does)."""
    unknown = set(schema) - KNOWN
    if unknown:
        return ["%s: schema uses keywords this checker does not know: %s" % (path, sorted(unknown))]
    out = []
    ref = schema.get("$ref")
    if ref is not None:
        target = root
        for part in ref.lstrip("#/").split("/"):
            target = target[part]
        out += errors(value, target, root, path)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(type_ok(value, n) for n in names):
            return out + ["%s: %r is not of type %s" % (path, value, "/".join(names))]
    if "const" in schema and value != schema["const"]:
        out.append("%s: %r is not %r" % (path, value, schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        out.append("%s: %r is not one of %s" % (path, value, schema["enum"]))
    if "minimum" in schema and type_ok(value, "number") and value < schema["minimum"]:
        out.append("%s: %r is below %r" % (path, value, schema["minimum"]))
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        out.append("%s: %r does not match %s" % (path, value, schema["pattern"]))
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                out.append("%s: required field %r missing" % (path, name))
        props = schema.get("properties", {})
        for name, v in value.items():
            if name in props:
                out += errors(v, props[name], root, "%s.%s" % (path, name))
            elif isinstance(schema.get("additionalProperties"), dict):
                out += errors(v, schema["additionalProperties"], root, "%s.%s" % (path, name))
            elif schema.get("additionalProperties") is False:
                out.append("%s: field %r not allowed" % (path, name))
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += errors(v, schema["items"], root, "%s[%d]" % (path, i))
    for sub in schema.get("allOf", []):
        out += errors(value, sub, root, path)
    if "if" in schema and not errors(value, schema["if"], root, path) and "then" in schema:
        out += errors(value, schema["then"], root, path)
    return out


def main(argv):
    expect_invalid = argv[:1] == ["--invalid"]
    if expect_invalid:
        argv = argv[1:]
    with open(argv[0]) as f:
        schema = json.load(f)
    failed = checked = 0
    for path in argv[1:]:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                checked += 1
                try:
                    problems = errors(json.loads(line), schema, schema)
                except ValueError as e:
                    problems = ["not JSON: %s" % e]
                if expect_invalid and not problems:
                    print("%s:%d: valid, but expected invalid" % (path, number))
                    failed += 1
                elif not expect_invalid and problems:
                    print("%s:%d: %s" % (path, number, "; ".join(problems)))
                    failed += 1
    print("%d lines checked, %d %s" % (checked, failed, "unexpectedly valid" if expect_invalid else "invalid"))
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
