/**
 * A tool registry that behaves as browserx's does (The-AI-Republic/browserx at 6727ff3, src/tools/ToolRegistry.ts
 * and the tool-call path of src/core/TurnManager.ts), written from its documented and observed behaviour, for
 * testing the adapter the way browserx will run it:
 * - register: the definition must have `type`; a function tool needs a name, a description and `parameters`
 *   of type object with `properties`; a name registers once. The messages are browserx's. getTool answers a
 *   registered tool's definition, or null.
 * - validate: required parameters present and not null; unknown top-level parameters refused unless
 *   additionalProperties is true; each parameter's type checked recursively (array items, declared object
 *   properties), at most one error per parameter; a property without a known type is UNKNOWN_TYPE. Enums are
 *   not checked.
 * - execute: never rejects. A validation failure is VALIDATION_ERROR "Parameter validation failed"; the handler
 *   gets `(parameters, {sessionId, turnId, toolName, metadata: undefined})`; a resolved handler is a success
 *   whatever it resolved with; a rejected one is EXECUTION_ERROR (TIMEOUT when its message says "timeout").
 * - what the LLM reads: JSON.stringify(data) for a success, "Error: <message>" for a failure.
 * - clear: every tool unregistered (BrowserxAgent.cleanup).
 *
 * The types are declared here again, from browserx's BaseTool.ts, independently of src/adapters/browserx-types.ts,
 * so that the compiler checks the shim's pairs against a second copy.
 */

export type JsonSchema =
  | { type: "boolean"; description?: string }
  | { type: "string"; description?: string }
  | { type: "number"; description?: string }
  | { type: "integer"; description?: string }
  | { type: "array"; items: JsonSchema; description?: string }
  | { type: "object"; properties: Record<string, JsonSchema>; required?: string[]; additionalProperties?: boolean };

export interface ResponsesApiTool {
  name: string;
  description: string;
  strict: boolean;
  parameters: JsonSchema;
}

export type ToolDefinition =
  | { type: "function"; function: ResponsesApiTool }
  | { type: "local_shell" }
  | { type: "web_search" }
  | { type: "custom"; custom: { name: string; description: string; format: { type: string; syntax: string; definition: string } } };

export interface ToolContext {
  sessionId: string;
  turnId: string;
  toolName: string;
  metadata?: Record<string, any>;
}

export interface ToolHandler {
  (parameters: Record<string, any>, context: ToolContext): Promise<any>;
}

export interface ValidationError {
  parameter: string;
  message: string;
  code: string;
}

export interface ToolExecutionResponse {
  success: boolean;
  data?: any;
  error?: { code: string; message: string; details?: any };
  duration: number;
}

export interface ToolExecutionRequest {
  toolName: string;
  parameters: Record<string, any>;
  sessionId: string;
  turnId: string;
}

export class BrowserxStyleRegistry {
  readonly #tools = new Map<string, { definition: ToolDefinition; handler: ToolHandler }>();

  async register(tool: ToolDefinition, handler: ToolHandler): Promise<void> {
    if (!tool || !tool.type) throw new Error("Tool definition missing type field");
    const { name, description } = namesOf(tool);
    if (!name || typeof name !== "string" || !name.trim()) throw new Error("Tool definition missing required field: name");
    if (!description || typeof description !== "string" || !description.trim()) {
      throw new Error("Tool definition missing required field: description");
    }
    if (tool.type === "function") {
      const parameters = tool.function.parameters as any;
      if (!parameters || typeof parameters !== "object") throw new Error("Tool definition missing required field: parameters");
      if (parameters.type !== "object") throw new Error('Tool parameters must be of type "object"');
      if (!parameters.properties || typeof parameters.properties !== "object") throw new Error("Tool parameters must define properties");
    }
    if (this.#tools.has(name)) throw new Error(`Tool '${name}' is already registered`);
    this.#tools.set(name, { definition: tool, handler });
  }

  /** What BrowserxAgent.cleanup() calls before the service worker replaces the agent. */
  clear(): void {
    this.#tools.clear();
  }

  getTool(name: string): ToolDefinition | null {
    return this.#tools.get(name)?.definition ?? null;
  }

  listTools(): ToolDefinition[] {
    return [...this.#tools.values()].map((tool) => tool.definition);
  }

  validate(toolName: string, parameters: Record<string, any>): ValidationError[] {
    const tool = this.#tools.get(toolName);
    if (!tool) return [{ parameter: "_tool", message: `Tool '${toolName}' not found`, code: "NOT_FOUND" }];
    const schema = (tool.definition.type === "function" ? tool.definition.function.parameters : undefined) as any;
    if (!schema || schema.type !== "object" || !schema.properties) return [];
    const errors: ValidationError[] = [];
    for (const name of schema.required ?? []) {
      if (!(name in parameters) || parameters[name] === null || parameters[name] === undefined) {
        errors.push({ parameter: name, message: "Required parameter missing", code: "REQUIRED" });
      }
    }
    for (const [name, value] of Object.entries(parameters)) {
      const property = schema.properties[name];
      if (!property) {
        if (!schema.additionalProperties) errors.push({ parameter: name, message: `Unknown parameter '${name}'`, code: "UNKNOWN_PARAMETER" });
        continue;
      }
      const error = checkType(name, value, property);
      if (error) errors.push(error);
    }
    return errors;
  }

  async execute(request: ToolExecutionRequest): Promise<ToolExecutionResponse> {
    const started = Date.now();
    const tool = this.#tools.get(request.toolName);
    if (!tool) return { success: false, error: { code: "TOOL_NOT_FOUND", message: `Tool '${request.toolName}' not found` }, duration: 0 };
    const errors = this.validate(request.toolName, request.parameters);
    if (errors.length > 0) {
      return { success: false, error: { code: "VALIDATION_ERROR", message: "Parameter validation failed", details: errors }, duration: 0 };
    }
    const context: ToolContext = { sessionId: request.sessionId, turnId: request.turnId, toolName: request.toolName, metadata: undefined };
    try {
      const data = await tool.handler(request.parameters, context);
      return { success: true, data, duration: Date.now() - started };
    } catch (error) {
      const message = (error as Error).message;
      const code = message.includes("timeout") ? "TIMEOUT" : "EXECUTION_ERROR";
      return { success: false, error: { code, message, details: error }, duration: Date.now() - started };
    }
  }
}

/** What browserx's TurnManager puts in the function_call_output the LLM reads. */
export function llmOutput(response: ToolExecutionResponse): string {
  return response.success ? JSON.stringify(response.data) : `Error: ${response.error?.message || "Tool execution failed"}`;
}

function namesOf(tool: ToolDefinition): { name: string; description: string } {
  switch (tool.type) {
    case "function":
      return { name: tool.function.name, description: tool.function.description };
    case "custom":
      return { name: tool.custom.name, description: tool.custom.description };
    case "local_shell":
      return { name: "local_shell", description: "Execute local shell commands" };
    case "web_search":
      return { name: "web_search", description: "Search the web" };
    default:
      throw new Error(`Unknown tool type: ${(tool as { type: string }).type}`);
  }
}

function checkType(path: string, value: unknown, schema: any): ValidationError | null {
  if (value === null || value === undefined) return { parameter: path, message: "Parameter value is null or undefined", code: "NULL_VALUE" };
  const mismatch = (message: string) => ({ parameter: path, message, code: "TYPE_MISMATCH" });
  switch (schema.type) {
    case "string":
      return typeof value === "string" ? null : mismatch("Expected string type");
    case "number":
      return typeof value === "number" && !Number.isNaN(value) ? null : mismatch("Expected number type");
    case "integer":
      if (typeof value !== "number" || Number.isNaN(value)) return mismatch("Expected integer type");
      return Number.isInteger(value) ? null : mismatch("Expected integer value");
    case "boolean":
      return typeof value === "boolean" ? null : mismatch("Expected boolean type");
    case "array":
      if (!Array.isArray(value)) return mismatch("Expected array type");
      if (schema.items) {
        for (const [index, element] of value.entries()) {
          const error = checkType(`${path}[${index}]`, element, schema.items);
          if (error) return error;
        }
      }
      return null;
    case "object":
      if (typeof value !== "object" || Array.isArray(value)) return mismatch("Expected object type");
      for (const [name, property] of Object.entries(schema.properties ?? {})) {
        if (name in (value as object)) {
          const error = checkType(`${path}.${name}`, (value as Record<string, unknown>)[name], property);
          if (error) return error;
        }
      }
      return null;
    default:
      return { parameter: path, message: `Unknown type: ${schema.type}`, code: "UNKNOWN_TYPE" };
  }
}
