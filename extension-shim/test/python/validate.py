"""Checks the llm_cache tool's eight definition variants with each provider's own Python SDK.

Usage: validate.py DEFINITIONS_JSON_FILE

The file holds the shim's ToolDefinitions object (variant name -> definition), as the TypeScript test dumps it
from the built shim. Every check that applies to a variant runs; each prints one line, "ok <variant>: <check>"
on stdout or "FAIL <variant>: <check>: <what the SDK said>" on stderr. The exit status is 1 when any check
failed, so a schema an SDK rejects fails the shim's `npm test` with the variant and the SDK's message named.

Why these checks: an integrator hands our definition to an SDK, which transforms or validates it before the
request goes out, and some SDKs reject what the API itself would take (anthropic's `transform_schema` asserts on
a type list; google-genai's `t_schema` calls `.upper()` on every type). So each variant goes through the code
its provider's SDK runs on a tool, and the JSON-Schema variants also through the other SDKs' schema transforms,
since integrators pass one provider's schema to another provider's SDK.
"""

import copy
import json
import sys
import traceback
from importlib.metadata import version

import pydantic


def typed_dict(kind, value, label):
    """Validates `value` as the SDK's TypedDict `kind` and refuses keys it doesn't declare (pydantic ignores them)."""
    pydantic.TypeAdapter(kind).validate_python(value)
    declared = kind.__required_keys__ | kind.__optional_keys__
    unknown = sorted(set(value) - declared)
    if unknown:
        raise ValueError(f"{label} has no field {', '.join(unknown)}")


def openai_responses_tool(definition):
    from openai.types.responses import FunctionToolParam

    typed_dict(FunctionToolParam, definition, "openai.types.responses.FunctionToolParam")


def openai_chat_tool(definition):
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.shared_params import FunctionDefinition

    typed_dict(ChatCompletionFunctionToolParam, definition, "openai.types.chat.ChatCompletionFunctionToolParam")
    typed_dict(FunctionDefinition, definition["function"], "openai.types.shared_params.FunctionDefinition")


def unchanged_by(transform, schema):
    """Runs a normalising transform on a copy and requires it to change nothing: the schema already is what the SDK makes."""
    before = copy.deepcopy(schema)
    after = transform(copy.deepcopy(schema))
    if after != before:
        raise ValueError(f"the SDK changed the schema: {json.dumps(after)[:400]}")


def openai_strict(schema):
    from openai.lib._pydantic import _ensure_strict_json_schema

    unchanged_by(lambda s: _ensure_strict_json_schema(s, path=(), root=s), schema)


def agents_strict(schema):
    from agents.strict_schema import ensure_strict_json_schema

    unchanged_by(ensure_strict_json_schema, schema)


def anthropic_tool(definition):
    from anthropic.types import ToolParam

    typed_dict(ToolParam, definition, "anthropic.types.ToolParam")


def anthropic_transform(schema):
    from anthropic.lib._parse._transform import transform_schema

    transform_schema(copy.deepcopy(schema))


def anthropic_transform_keeps_everything(schema):
    """For the strict variant: the transform moves no keyword into a description, so nothing is lost to the API."""
    from anthropic.lib._parse._transform import transform_schema

    after = transform_schema(copy.deepcopy(schema))
    for name, prop in schema["properties"].items():
        if after["properties"][name].get("description") != prop.get("description"):
            raise ValueError(f"properties/{name}: moved into the description: {after['properties'][name]['description'][-120:]}")


def genai_t_schema(schema):
    from google.genai import _transformers

    result = _transformers.t_schema(None, copy.deepcopy(schema))
    if result is None:
        raise ValueError("t_schema gave no schema")


def genai_function_declaration(definition):
    from google.genai import _transformers, types

    types.FunctionDeclaration(**copy.deepcopy(definition))
    types.FunctionDeclaration(
        name=definition["name"],
        description=definition["description"],
        parameters=_transformers.t_schema(None, copy.deepcopy(definition["parameters"])),
    )


def mcp_tool(definition):
    from mcp.types import Tool

    tool = Tool.model_validate(definition)
    dumped = tool.model_dump(by_alias=True, exclude_none=True)
    if dumped != definition:
        raise ValueError(f"mcp.types.Tool kept something else: {json.dumps(dumped)[:400]}")


def schema_of(variant, definition):
    if variant.startswith("openaiResponses"):
        return definition["parameters"]
    if variant.startswith("openaiChat"):
        return definition["function"]["parameters"]
    if variant.startswith("anthropic"):
        return definition["input_schema"]
    if variant == "mcp":
        return definition["inputSchema"]
    return definition["parameters"]


def checks_for(variant, definition):
    """(check name, function, argument) for every check that applies to `variant`."""
    schema = schema_of(variant, definition)
    strict = variant.endswith("Strict")
    checks = []
    if variant.startswith("openaiResponses"):
        checks.append(("openai FunctionToolParam", openai_responses_tool, definition))
    if variant.startswith("openaiChat"):
        checks.append(("openai ChatCompletionFunctionToolParam", openai_chat_tool, definition))
    if variant.startswith("openai") and strict:
        checks.append(("openai _ensure_strict_json_schema", openai_strict, schema))
        checks.append(("openai-agents ensure_strict_json_schema", agents_strict, schema))
    if variant.startswith("anthropic"):
        checks.append(("anthropic ToolParam", anthropic_tool, definition))
    if variant == "anthropicStrict":
        checks.append(("anthropic transform_schema keeps every keyword", anthropic_transform_keeps_everything, schema))
    elif variant == "gemini":
        checks.append(("google-genai FunctionDeclaration", genai_function_declaration, definition))
    else:
        checks.append(("anthropic transform_schema", anthropic_transform, schema))
    checks.append(("google-genai t_schema", genai_t_schema, schema))
    if variant == "mcp":
        checks.append(("mcp Tool", mcp_tool, definition))
    return checks


def main(argv):
    if len(argv) != 2:
        print("usage: validate.py DEFINITIONS_JSON_FILE", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as file:
        definitions = json.load(file)
    print("sdks: " + ", ".join(f"{p} {version(p)}" for p in ["anthropic", "google-genai", "openai", "openai-agents", "mcp"]))
    failures = 0
    for variant, definition in definitions.items():
        for name, check, argument in checks_for(variant, definition):
            try:
                check(argument)
                print(f"ok {variant}: {name}", flush=True)
            except Exception as error:  # Any exception is a rejection by the SDK, whatever its type.
                failures += 1
                # The SDK's own frame that raised, not typing.py's assert_never behind it.
                frames = traceback.extract_tb(error.__traceback__)
                where = next((f for f in reversed(frames) if "site-packages" in f.filename), frames[-1])
                print(
                    f"FAIL {variant}: {name}: {type(error).__name__}: {str(error)[:400]} "
                    f"(at {where.filename.split('site-packages/')[-1]}:{where.lineno})",
                    file=sys.stderr,
                )
    if failures:
        print(f"{failures} check(s) failed: a provider's SDK rejects the definitions above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
