/**
 * The llm_cache definition in every API's form, checked against each API's rules: with the provider's own SDK
 * where it checks offline (OpenAI's strict-schema transform, Anthropic's schema transform, the MCP SDK's Tool
 * schema), with a JSON Schema 2020-12 validator, and with checkers of the published rules where no SDK checks
 * (rules.ts beside this file says where each rule comes from). Each checker is also shown to catch the mistakes
 * the old definition made, so a pass means something. The Python SDKs check the same eight in
 * python-validators.test.ts.
 */

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { ToolSchema } from "@modelcontextprotocol/sdk/types.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import {
  STORAGE_TOOL_DEFINITIONS,
  STRICT_NOTE,
  toolDefinitions,
  type JsonSchemaObject,
  type ToolDefinitions,
} from "../src/tool/definitions.js";
import { STORAGE_TOOL_SPEC } from "../src/tool/spec.js";
import { anthropicStrictProblems, geminiProblems, openAiStrictProblems, TOOL_NAME_RULES } from "./helpers/schema-rules.js";

const require = createRequire(import.meta.url);
const { toStrictJsonSchema } = require("openai/lib/transform") as { toStrictJsonSchema: (schema: object) => object };
const { transformJSONSchema } = require("@anthropic-ai/sdk/lib/transform-json-schema") as {
  transformJSONSchema: (schema: object) => object;
};

const D: ToolDefinitions = STORAGE_TOOL_DEFINITIONS;
const PARAMETERS = Object.keys(STORAGE_TOOL_SPEC.parameters);

/** The definition the shim had before: untyped `data`, a free-form object, optional fields not nullable. */
const OLD_PARAMETERS = {
  type: "object",
  properties: {
    action: { type: "string", enum: ["write", "read"] },
    data: { description: "any JSON value" },
    customMetadata: { type: "object", description: "extra facts" },
    limit: { type: "integer", minimum: 1, maximum: 100 },
  },
  required: ["action"],
};

/** Calls an LLM would make with each definition: every action, data of every JSON kind as JSON text. */
function sampleCalls(strict: boolean): object[] {
  const nulls = Object.fromEntries(PARAMETERS.map((name) => [name, null]));
  const call = (fields: object) => (strict ? { ...nulls, ...fields } : fields);
  return [
    call({ action: "write", data: '{"from":"ana@example.com","tags":["q3"]}', description: "Summary of email 1/50" }),
    call({ action: "write", data: "[1, 2, 3]", description: "ids", customMetadata: '{"source":"gmail"}' }),
    call({ action: "write", data: "Plain text summary.", description: "text" }),
    call({ action: "update", storageKey: "a7b3c9d2_f4e8a1b6", data: "42", description: "count" }),
    call({ action: "update", storageKey: "a7b3c9d2_f4e8a1b6", data: "true" }),
    call({ action: "read", storageKey: "a7b3c9d2_f4e8a1b6", pointer: "/emails/3" }),
    call({ action: "list", limit: 20, cursor: "abc" }),
    call({ action: "delete", storageKey: "a7b3c9d2_f4e8a1b6" }),
    call({ action: "stats" }),
  ];
}

function compile(schema: object) {
  return new Ajv2020({ strict: true, allErrors: true }).compile(schema);
}

describe("every variant", () => {
  it("comes from one spec: the same name, the same parameters, and a type on every property", () => {
    const schemas: Array<[string, { properties: Record<string, { type?: unknown; anyOf?: Array<{ type?: unknown }> }> }]> = [
      ["openaiResponses", D.openaiResponses.parameters],
      ["openaiResponsesStrict", D.openaiResponsesStrict.parameters],
      ["openaiChat", D.openaiChat.function.parameters],
      ["openaiChatStrict", D.openaiChatStrict.function.parameters],
      ["anthropic", D.anthropic.input_schema],
      ["anthropicStrict", D.anthropicStrict.input_schema],
      ["gemini", D.gemini.parameters],
      ["mcp", D.mcp.inputSchema],
    ];
    assert.deepEqual(schemas.map(([name]) => name).sort(), Object.keys(D).sort(), "every variant is checked here");
    for (const [variant, schema] of schemas) {
      assert.deepEqual(Object.keys(schema.properties), PARAMETERS, variant);
      for (const [name, property] of Object.entries(schema.properties)) {
        const typed = property.type !== undefined || (property.anyOf ?? []).every((branch) => branch.type !== undefined);
        assert.ok(typed && (property.type === undefined) !== (property.anyOf === undefined), `${variant}: ${name} has no type`);
      }
    }
    for (const name of [D.openaiResponses.name, D.openaiChat.function.name, D.anthropic.name, D.gemini.name, D.mcp.name]) {
      assert.equal(name, "llm_cache");
    }
    for (const [api, rule] of Object.entries(TOOL_NAME_RULES)) assert.match("llm_cache", rule, api);
    // Every definition survives the JSON round trip each API puts it through.
    assert.deepEqual(JSON.parse(JSON.stringify(D)), D);
  });

  it("carries data of every JSON kind as JSON text, and every sample call validates (2020-12)", () => {
    for (const [strict, schema] of [
      [false, D.openaiResponses.parameters],
      [true, D.openaiResponsesStrict.parameters],
    ] as const) {
      const validate = compile(schema);
      for (const call of sampleCalls(strict)) assert.ok(validate(call), `${JSON.stringify(call)}: ${JSON.stringify(validate.errors)}`);
      assert.equal(validate({ action: "write", data: { a: 1 }, description: "x", ...(strict ? {} : {}) }), false, "data is text");
      assert.equal(validate({ action: "explode" }), false, "actions are an enum");
      assert.equal(validate({ action: "list", extra: 1 }), false, "no unknown parameters");
    }
    assert.equal(compile(D.openaiResponsesStrict.parameters)({ action: "list" }), false, "strict calls carry every parameter");
  });

  it("has no member through which the model could say where an item comes from, and its validators refuse one", () => {
    // Only the extension sets provenance: no definition names it, anywhere in its schema or its text.
    const text = JSON.stringify(D);
    for (const member of ["provenance", "trust", "endorse", "origin", "upstream", "derivedFrom"]) {
      assert.ok(!new RegExp(`"${member}\\w*"\\s*:`, "i").test(text), `a definition has a "${member}" member`);
    }
    for (const [strict, schema] of [
      [false, D.openaiResponses.parameters],
      [true, D.openaiResponsesStrict.parameters],
      [false, D.anthropic.input_schema],
      [false, D.mcp.inputSchema],
    ] as const) {
      const validate = compile(schema);
      for (const call of sampleCalls(strict)) {
        for (const member of ["provenance", "trust", "origin", "endorsed"]) {
          const value = member === "provenance" ? { origin: "user" } : "trusted";
          assert.equal(validate({ ...call, [member]: value }), false, `${JSON.stringify(call)} with ${member}`);
        }
      }
    }
  });
});

describe("nullable parameters", () => {
  it("are anyOf a type and null, never a type list, which anthropic's and google-genai's Python SDKs refuse", () => {
    const lists: string[] = [];
    const visit = (node: unknown, path: string): void => {
      if (typeof node !== "object" || node === null) return;
      if (Array.isArray((node as { type?: unknown }).type)) lists.push(path);
      for (const [key, child] of Object.entries(node)) visit(child, `${path}/${key}`);
    };
    visit(D, "");
    assert.deepEqual(lists, []);
    for (const schema of [D.openaiResponsesStrict.parameters, D.openaiChatStrict.function.parameters, D.anthropicStrict.input_schema]) {
      const optional = PARAMETERS.filter((name) => name !== "action");
      for (const name of optional) {
        const parameter = STORAGE_TOOL_SPEC.parameters[name];
        assert.deepEqual(schema.properties[name], {
          anyOf: [{ type: parameter?.type }, { type: "null" }],
          description: parameter?.description,
        });
      }
      assert.equal(schema.properties.action?.type, "string", "a parameter every call has is not nullable");
    }
    // The plain variants leave optional parameters out of `required` instead, so they stay plain types.
    assert.deepEqual(D.openaiResponses.parameters.properties.data?.type, "string");
  });
});

describe("the name option", () => {
  it("names every variant, and changes nothing else", () => {
    const named = toolDefinitions({ name: "host_cache" });
    const names = [named.openaiResponses.name, named.openaiResponsesStrict.name, named.openaiChat.function.name,
      named.openaiChatStrict.function.name, named.anthropic.name, named.anthropicStrict.name, named.gemini.name, named.mcp.name];
    assert.deepEqual(names, Array(8).fill("host_cache"));
    const renamed = JSON.parse(JSON.stringify(named).replaceAll('"host_cache"', '"llm_cache"'));
    assert.deepEqual(renamed, D);
    assert.deepEqual(toolDefinitions(), D, "llm_cache by default");
  });

  it("refuses a name some API would refuse, saying which option to change", () => {
    for (const name of ["", "9cache", "llm cache", "cache.v2", "x".repeat(65)]) {
      assert.throws(() => toolDefinitions({ name }), (error: Error) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, /^the tool's name must be a letter or _ .* got ".*"\. Pass another name option, such as "host_cache"$/s);
        return true;
      }, name);
    }
    for (const name of ["host_cache", "_c", "x".repeat(64)]) {
      for (const rule of Object.values(TOOL_NAME_RULES)) assert.match(name, rule, "every API takes a name the option takes");
    }
  });
});

describe("OpenAI", () => {
  it("strict variants pass the SDK's strict-schema transform unchanged and the published rules", () => {
    for (const parameters of [D.openaiResponsesStrict.parameters, D.openaiChatStrict.function.parameters]) {
      assert.deepEqual(toStrictJsonSchema(parameters), parameters);
      assert.deepEqual(openAiStrictProblems(parameters), []);
    }
    assert.equal(D.openaiResponsesStrict.strict, true);
    assert.equal(D.openaiChatStrict.function.strict, true);
    assert.ok(D.openaiResponsesStrict.description.endsWith(STRICT_NOTE));
  });

  it("plain variants say strict: false where the API would assume strict, and keep bounds and enum", () => {
    assert.deepEqual(Object.keys(D.openaiResponses), ["type", "name", "description", "parameters", "strict"]);
    assert.equal(D.openaiResponses.strict, false, "the Responses API treats a function without strict as strict");
    assert.equal(D.openaiChat.function.strict, undefined, "Chat Completions is plain by default");
    assert.deepEqual(D.openaiChat.function.parameters, D.openaiResponses.parameters);
    assert.deepEqual(D.openaiResponses.parameters.required, ["action"]);
    assert.equal(D.openaiResponses.parameters.properties.limit?.minimum, 1);
    assert.equal(D.openaiResponses.parameters.properties.offset?.minimum, 0);
    assert.throws(() => toStrictJsonSchema(D.openaiResponses.parameters), /without `.nullable\(\)`/, "plain is not strict");
  });

  it("the checks catch the old definition", () => {
    assert.throws(() => toStrictJsonSchema(OLD_PARAMETERS), /nullable/);
    // The SDK lets an untyped property through (the API doesn't); our rule check catches it.
    const typeless = { type: "object", properties: { data: { description: "x" } }, required: ["data"], additionalProperties: false };
    assert.deepEqual(toStrictJsonSchema(typeless), typeless);
    assert.deepEqual(openAiStrictProblems(typeless), ["properties/data: no type"]);
  });
});

describe("Anthropic", () => {
  it("the strict variant is left as it is by the SDK's transform (but for the type beside an enum) and keeps the rules", () => {
    const schema = D.anthropicStrict.input_schema;
    const { type: _type, ...actionWithoutType } = schema.properties.action as object as { type: string };
    assert.deepEqual(transformJSONSchema(schema), { ...schema, properties: { ...schema.properties, action: actionWithoutType } });
    assert.deepEqual(anthropicStrictProblems(schema), []);
    assert.equal(D.anthropicStrict.strict, true);
  });

  it("the plain variant is a 2020-12 object schema; its bounds are ones the SDK would move into the description", () => {
    assert.equal(D.anthropic.input_schema.type, "object");
    compile(D.anthropic.input_schema);
    assert.equal(D.anthropic.strict, undefined);
    assert.deepEqual(anthropicStrictProblems(D.anthropic.input_schema), [
      "properties/description: maxLength is not supported",
      "properties/offset: minimum is not supported",
      "properties/limit: minimum is not supported",
    ]);
  });

  it("the checks catch the old definition", () => {
    assert.throws(() => transformJSONSchema(OLD_PARAMETERS), /must have a type/);
    assert.ok(anthropicStrictProblems(OLD_PARAMETERS as unknown as JsonSchemaObject).length >= 3);
  });
});

describe("Gemini", () => {
  it("uses only the fields of Gemini's Schema, one upper-case type each, enum on strings only", () => {
    assert.deepEqual(geminiProblems(D.gemini.parameters), []);
    assert.deepEqual(Object.keys(D.gemini), ["name", "description", "parameters"]);
    assert.deepEqual(D.gemini.parameters.properties.action, {
      type: "STRING",
      description: STORAGE_TOOL_SPEC.parameters.action?.description,
      format: "enum",
      enum: ["write", "read", "append", "list", "search", "update", "delete", "stats"],
    });
    assert.deepEqual(D.gemini.parameters.required, ["action"]);
  });

  it("the check catches the old definition and the JSON Schema forms Gemini refuses", () => {
    assert.deepEqual(geminiProblems(OLD_PARAMETERS), [
      "type: object is not one of Gemini's types",
      "properties/action/type: string is not one of Gemini's types",
      "properties/data: no type",
      "properties/customMetadata/type: object is not one of Gemini's types",
      "properties/customMetadata: an object needs properties",
      "properties/limit/type: integer is not one of Gemini's types",
    ]);
    assert.deepEqual(geminiProblems(D.openaiResponsesStrict.parameters).slice(0, 2), [
      "additionalProperties: not a field of Gemini's Schema",
      "type: object is not one of Gemini's types",
    ]);
  });
});

describe("MCP", () => {
  it("passes the SDK's Tool schema with nothing stripped, and its inputSchema is valid 2020-12", () => {
    const parsed = ToolSchema.parse(D.mcp);
    assert.deepEqual(parsed, D.mcp);
    compile(D.mcp.inputSchema);
    assert.equal(D.mcp.annotations.destructiveHint, true, "delete and update change data");
    assert.equal(ToolSchema.safeParse({ name: "llm_cache", inputSchema: { properties: {} } }).success, false);
  });
});
