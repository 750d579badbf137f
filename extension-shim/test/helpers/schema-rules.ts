/**
 * Checkers for the published schema rules that no SDK checks offline. Each returns the problems it finds, as
 * "<path>: <what is wrong>", so a test can show both a clean definition and a caught mistake.
 *
 * Sources (read for this file):
 * - OpenAI, "Structured model outputs", section "Supported schemas": the root is an object (not anyOf); every
 *   object sets additionalProperties: false and lists every property in `required`; every node has a type;
 *   allOf, not, if/then/else, dependentRequired, dependentSchemas are unsupported; at most 5000 properties,
 *   10 levels of nesting and 1000 enum values.
 * - Anthropic, "Structured outputs" / "Strict tool use": objects need additionalProperties: false; no numeric
 *   (minimum, maximum, multipleOf, exclusive*) or string-length constraints, no maxItems, minItems only 0 or 1;
 *   per request at most 16 union-typed and 24 optional parameters across strict tools.
 * - Google, Gemini API "Function calling" and the Schema reference: a Schema has only the fields listed in
 *   GEMINI_FIELDS; `type` is one of the Type enum's names; enum is for STRING; an OBJECT needs non-empty
 *   properties; additionalProperties, $ref, const, oneOf and the like are refused ("Cannot find field").
 * - Tool names: OpenAI ^[a-zA-Z0-9_-]{1,64}$; Anthropic ^[a-zA-Z0-9_-]{1,128}$; Gemini starts with a letter or
 *   underscore, then letters, digits, _ . : - up to 128; MCP (2025-11-25) [A-Za-z0-9._-]{1,128}.
 */

type Schema = { [key: string]: any };

export const TOOL_NAME_RULES: Record<string, RegExp> = {
  openai: /^[a-zA-Z0-9_-]{1,64}$/,
  anthropic: /^[a-zA-Z0-9_-]{1,128}$/,
  gemini: /^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/,
  mcp: /^[A-Za-z0-9._-]{1,128}$/,
};

const OPENAI_UNSUPPORTED = ["allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "patternProperties"];
const ANTHROPIC_UNSUPPORTED = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "maxItems"];

const GEMINI_FIELDS = new Set([
  "anyOf", "default", "description", "enum", "example", "format", "items", "maxItems", "maxLength", "maxProperties",
  "maximum", "minItems", "minLength", "minProperties", "minimum", "nullable", "pattern", "properties",
  "propertyOrdering", "required", "title", "type",
]);
const GEMINI_TYPES = new Set(["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"]);

/** Calls `visit` on every schema node with its path and depth (the root's object is depth 1). */
function walk(schema: Schema, visit: (node: Schema, path: string, depth: number) => void, path = "", depth = 1): void {
  visit(schema, path, depth);
  for (const [name, child] of Object.entries(schema.properties ?? {})) walk(child as Schema, visit, join(path, `properties/${name}`), depth + 1);
  if (schema.items) walk(schema.items, visit, join(path, "items"), depth);
  for (const [n, branch] of (schema.anyOf ?? []).entries()) walk(branch, visit, join(path, `anyOf/${n}`), depth);
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}/${key}`;
}

function at(path: string): string {
  return path === "" ? "(root)" : path;
}

function typed(node: Schema): boolean {
  return node.type !== undefined || node.enum !== undefined || node.const !== undefined || node.anyOf !== undefined || node.$ref !== undefined;
}

function types(node: Schema): string[] {
  return Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type];
}

export function openAiStrictProblems(schema: Schema): string[] {
  const problems: string[] = [];
  if (schema.type !== "object" || schema.anyOf) problems.push("(root): must be an object, not anyOf");
  let properties = 0;
  let enumValues = 0;
  walk(schema, (node, path, depth) => {
    if (!typed(node)) problems.push(`${at(path)}: no type`);
    for (const keyword of OPENAI_UNSUPPORTED) if (keyword in node) problems.push(`${at(path)}: ${keyword} is not supported`);
    enumValues += node.enum?.length ?? 0;
    if (types(node).includes("object")) {
      if (node.additionalProperties !== false) problems.push(`${at(path)}: additionalProperties must be false`);
      const names = Object.keys(node.properties ?? {});
      properties += names.length;
      if (depth > 10) problems.push(`${at(path)}: nested deeper than 10 levels`);
      for (const name of names) {
        if (!(node.required ?? []).includes(name)) problems.push(`${at(path)}: ${name} is not in required`);
      }
    }
    if (types(node).includes("array") && !node.items) problems.push(`${at(path)}: an array needs items`);
  });
  if (properties > 5000) problems.push(`(root): ${properties} properties, more than 5000`);
  if (enumValues > 1000) problems.push(`(root): ${enumValues} enum values, more than 1000`);
  return problems;
}

export function anthropicStrictProblems(schema: Schema): string[] {
  const problems: string[] = [];
  walk(schema, (node, path) => {
    if (!typed(node)) problems.push(`${at(path)}: no type`);
    if ((node.$ref ?? "").startsWith("#") && (node.$ref === "#" || path.includes(node.$ref.slice(2)))) {
      problems.push(`${at(path)}: recursive schemas are not supported`);
    }
    for (const keyword of ANTHROPIC_UNSUPPORTED) if (keyword in node) problems.push(`${at(path)}: ${keyword} is not supported`);
    if ((node.minItems ?? 0) > 1) problems.push(`${at(path)}: minItems may only be 0 or 1`);
    if (types(node).includes("object") && node.additionalProperties !== false) {
      problems.push(`${at(path)}: additionalProperties must be false`);
    }
  });
  const parameters = Object.entries(schema.properties ?? {}) as Array<[string, Schema]>;
  const unions = parameters.filter(([, node]) => types(node).length > 1 || node.anyOf).length;
  const optional = parameters.filter(([name]) => !(schema.required ?? []).includes(name)).length;
  if (unions > 16) problems.push(`(root): ${unions} union-typed parameters, more than 16`);
  if (optional > 24) problems.push(`(root): ${optional} optional parameters, more than 24`);
  return problems;
}

export function geminiProblems(schema: Schema): string[] {
  const problems: string[] = [];
  walk(schema, (node, path) => {
    for (const key of Object.keys(node)) {
      if (!GEMINI_FIELDS.has(key)) problems.push(`${join(path, key)}: not a field of Gemini's Schema`);
    }
    if (node.type === undefined) {
      if (!node.anyOf) problems.push(`${at(path)}: no type`);
    } else if (typeof node.type !== "string" || !GEMINI_TYPES.has(node.type)) {
      problems.push(`${join(path, "type")}: ${String(node.type)} is not one of Gemini's types`);
    }
    const type = typeof node.type === "string" ? node.type.toUpperCase() : undefined;
    if (node.enum && type !== "STRING") problems.push(`${join(path, "enum")}: only strings take an enum`);
    if (node.enum && !node.enum.every((value: unknown) => typeof value === "string")) problems.push(`${join(path, "enum")}: values must be strings`);
    if (type === "OBJECT" && Object.keys(node.properties ?? {}).length === 0) problems.push(`${at(path)}: an object needs properties`);
    if (type !== "OBJECT" && (node.properties || node.required)) problems.push(`${at(path)}: properties only on an object`);
    for (const name of node.required ?? []) {
      if (!(name in (node.properties ?? {}))) problems.push(`${at(path)}: required ${name} is not a property`);
    }
    if (type === "ARRAY" && !node.items) problems.push(`${at(path)}: an array needs items`);
  });
  return problems;
}
