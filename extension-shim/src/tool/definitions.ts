/**
 * The tool's definition for each LLM API, all generated from one ToolSpec (spec.ts).
 *
 * Two JSON schemas come out of a spec:
 * - plain: the parameters an action doesn't use are left out of `required`; bounds (maxLength, minimum,
 *   maximum) and the action's `enum` are schema keywords.
 * - strict: what OpenAI's and Anthropic's strict modes take. Every object has `additionalProperties: false`,
 *   every property is in `required`, an optional one is `anyOf: [{type}, {type: "null"}]`, and bounds are
 *   stated in words only (Anthropic's strict mode refuses them; the host enforces them anyway). The
 *   description tells the LLM to pass null for what it doesn't use. A nullable property is an anyOf, not the
 *   shorter type list `["string", "null"]`, because SDKs that transform schemas before sending them take only
 *   the anyOf form: anthropic's Python `transform_schema` asserts on a list and google-genai's `t_schema` calls
 *   `.upper()` on it, while both turn the anyOf into what their API takes (pydantic writes Optional this way).
 * Gemini takes neither as it is: its function declarations use an OpenAPI subset with one upper-case type per
 * node, `enum` on strings only and no `additionalProperties`, so it gets a third, converted form.
 *
 * test/definitions.test.ts checks each variant with the provider's own SDK where one checks offline (OpenAI's
 * strict-schema transform, Anthropic's schema transform, the MCP SDK's Tool schema with a 2020-12 validator)
 * and with checkers of the published rules for the rest; test/python-validators.test.ts runs the Python SDKs'
 * own code on all eight (test/python/validate.py).
 */

import { toolSpec, type ParameterSpec, type ToolNameOption, type ToolSpec } from "./spec.js";

/**
 * One parameter in JSON Schema, as OpenAI, Anthropic and MCP take it. It has either `type` or, in a strict
 * schema where it may be null, `anyOf` (see the file's comment).
 */
export interface JsonSchemaProperty {
  type?: "string" | "integer";
  anyOf?: [{ type: "string" | "integer"; enum?: string[] }, { type: "null" }];
  description: string;
  enum?: string[];
  maxLength?: number;
  minimum?: number;
  maximum?: number;
}

export interface JsonSchemaObject {
  type: "object";
  properties: Record<string, JsonSchemaProperty>;
  required: string[];
  additionalProperties: false;
}

/** One parameter in Gemini's Schema (an OpenAPI 3.0 subset). */
export interface GeminiProperty {
  type: "STRING" | "INTEGER";
  description: string;
  format?: "enum";
  enum?: string[];
  maxLength?: number;
  minimum?: number;
  maximum?: number;
}

export interface GeminiObject {
  type: "OBJECT";
  properties: Record<string, GeminiProperty>;
  required: string[];
}

/** OpenAI Responses API: a function tool. The API treats a tool without `strict` as strict, so it is explicit. */
export interface OpenAiResponsesTool {
  type: "function";
  name: string;
  description: string;
  parameters: JsonSchemaObject;
  strict: boolean;
}

/** OpenAI Chat Completions: the function nested under `function`. */
export interface OpenAiChatTool {
  type: "function";
  function: { name: string; description: string; parameters: JsonSchemaObject; strict?: boolean };
}

export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: JsonSchemaObject;
  strict?: boolean;
}

/** Gemini's FunctionDeclaration. Gemini has no strict flag on a tool; a request asks for mode VALIDATED. */
export interface GeminiFunctionDeclaration {
  name: string;
  description: string;
  parameters: GeminiObject;
}

/** An MCP tool, as a server lists it (tools/list). */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchemaObject;
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
}

export interface ToolDefinitions {
  openaiResponses: OpenAiResponsesTool;
  openaiResponsesStrict: OpenAiResponsesTool;
  openaiChat: OpenAiChatTool;
  openaiChatStrict: OpenAiChatTool;
  anthropic: AnthropicTool;
  anthropicStrict: AnthropicTool;
  gemini: GeminiFunctionDeclaration;
  mcp: McpTool;
}

export type DefinitionVariant = keyof ToolDefinitions;

/** The variants whose schema makes the LLM send every parameter, null where unused. */
export const STRICT_VARIANTS: readonly DefinitionVariant[] = ["openaiResponsesStrict", "openaiChatStrict", "anthropicStrict"];

/** Added to the description of strict variants, whose calls carry every parameter. */
export const STRICT_NOTE = " Every parameter must be present: pass null for those the action doesn't use.";

export function jsonSchema(spec: ToolSpec, mode: "plain" | "strict"): JsonSchemaObject {
  const properties: Record<string, JsonSchemaProperty> = {};
  for (const [name, parameter] of Object.entries(spec.parameters)) {
    const optional = !spec.required.includes(name);
    properties[name] =
      mode === "plain" ? { type: parameter.type, ...keywords(parameter, true) } : strictProperty(parameter, optional);
  }
  return {
    type: "object",
    properties,
    required: mode === "plain" ? [...spec.required] : Object.keys(spec.parameters),
    additionalProperties: false,
  };
}

function strictProperty(parameter: ParameterSpec, optional: boolean): JsonSchemaProperty {
  const { description, enum: choices } = keywords(parameter, false);
  // No optional parameter has an enum (only `action` does, and every call has it); if one ever did, the enum
  // would go inside the first branch, where OpenAI and both SDKs' transforms look for it.
  if (optional) return { anyOf: [{ type: parameter.type, ...(choices ? { enum: choices } : {}) }, { type: "null" }], description };
  return choices ? { type: parameter.type, description, enum: choices } : { type: parameter.type, description };
}

/** The description, enum and (if wanted) bounds of a parameter, in the order the APIs print them. */
function keywords(parameter: ParameterSpec, withBounds: boolean) {
  const out: { description: string; enum?: string[]; maxLength?: number; minimum?: number; maximum?: number } = {
    description: parameter.description,
  };
  if (parameter.enum) out.enum = [...parameter.enum];
  if (withBounds) {
    if (parameter.maxLength !== undefined) out.maxLength = parameter.maxLength;
    if (parameter.minimum !== undefined) out.minimum = parameter.minimum;
    if (parameter.maximum !== undefined) out.maximum = parameter.maximum;
  }
  return out;
}

export function geminiSchema(spec: ToolSpec): GeminiObject {
  const properties: Record<string, GeminiProperty> = {};
  for (const [name, parameter] of Object.entries(spec.parameters)) {
    const { enum: choices, ...rest } = keywords(parameter, true);
    const type = parameter.type === "string" ? "STRING" : "INTEGER";
    properties[name] = choices ? { type, ...rest, format: "enum", enum: choices } : { type, ...rest };
  }
  return { type: "OBJECT", properties, required: [...spec.required] };
}

/** Every variant of the tool's definition, under the name in `options` (llm_cache by default). */
export function toolDefinitions(options: ToolNameOption = {}): ToolDefinitions {
  return definitionsOf(toolSpec(options));
}

/** Every variant of a spec's definition. */
export function definitionsOf(spec: ToolSpec): ToolDefinitions {
  const { name, description } = spec;
  const strictDescription = description + STRICT_NOTE;
  const plain = () => jsonSchema(spec, "plain");
  const strict = () => jsonSchema(spec, "strict");
  return {
    openaiResponses: { type: "function", name, description, parameters: plain(), strict: false },
    openaiResponsesStrict: { type: "function", name, description: strictDescription, parameters: strict(), strict: true },
    openaiChat: { type: "function", function: { name, description, parameters: plain() } },
    openaiChatStrict: {
      type: "function",
      function: { name, description: strictDescription, parameters: strict(), strict: true },
    },
    anthropic: { name, description, input_schema: plain() },
    anthropicStrict: { name, description: strictDescription, input_schema: strict(), strict: true },
    gemini: { name, description, parameters: geminiSchema(spec) },
    mcp: {
      name,
      title: spec.title,
      description,
      inputSchema: plain(),
      annotations: {
        title: spec.title,
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
  };
}

/** The llm_cache tool in every API's form. */
export const STORAGE_TOOL_DEFINITIONS: ToolDefinitions = toolDefinitions();
