/**
 * The shapes browserx's tool registry takes (its src/tools/BaseTool.ts), declared here field for field so that
 * what the shim hands to `registry.register(definition, handler)` is checked against them at compile time,
 * without a dependency on browserx and without casts. Every field is mutable, as in browserx: an `as const`
 * definition would not be assignable.
 *
 * Note what browserx's JsonSchema can't say: there is no `enum`, no bounds, no `description` on an object, and
 * no "any value". Its registry checks each parameter's `type` and rejects unknown top-level parameters.
 */

export type BrowserxJsonSchema =
  | { type: "boolean"; description?: string }
  | { type: "string"; description?: string }
  | { type: "number"; description?: string }
  | { type: "integer"; description?: string }
  | { type: "array"; items: BrowserxJsonSchema; description?: string }
  | {
      type: "object";
      properties: Record<string, BrowserxJsonSchema>;
      required?: string[];
      additionalProperties?: boolean;
    };

export interface BrowserxResponsesApiTool {
  name: string;
  description: string;
  strict: boolean;
  parameters: BrowserxJsonSchema;
}

/** browserx's ToolDefinition, the function variant (the others are its built-in tools). */
export interface BrowserxToolDefinition {
  type: "function";
  function: BrowserxResponsesApiTool;
}

/** What browserx passes a handler besides the parameters. `turnId` is "turn_<ms>", one per call. */
export interface BrowserxToolContext {
  sessionId: string;
  turnId: string;
  toolName: string;
  metadata?: Record<string, any>;
}

/**
 * browserx's ToolHandler. What it resolves with is sent to the LLM as `JSON.stringify(result)`; a rejection is
 * recorded as a failure and the LLM reads `Error: <message>`.
 */
export interface BrowserxToolHandler {
  (parameters: Record<string, any>, context: BrowserxToolContext): Promise<any>;
}
