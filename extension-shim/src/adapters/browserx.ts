/**
 * browserx: the llm_cache tool and the old browser_storage tool, each as a `{definition, handler}` pair for its
 * `registry.register(definition, handler)`.
 *
 * - The definition is browserx's ToolDefinition (the OpenAI function shape with `strict: false`), its schema
 *   limited to what browserx's JsonSchema and parameter check know: a type on every property, no enum (the
 *   actions are named in the description instead), no unknown parameters.
 * - The handler resolves with the compact text on success. On failure it rejects with an Error whose message is
 *   the same corrective text, so browserx records a failure and the LLM still reads the way out
 *   ("Error: llm_cache read failed: ItemNotFoundError: … Next: …").
 * - browser_storage answers exactly as the old tool did, failures included (see legacy/browser-storage.ts).
 */

import type { LlmCache } from "../llm-cache.js";
import { BrowserStorageTool, type BrowserStorageOptions } from "../legacy/browser-storage.js";
import { STORAGE_TOOL_SPEC, type ToolSpec } from "../tool/spec.js";
import type { BrowserxJsonSchema, BrowserxToolContext, BrowserxToolDefinition, BrowserxToolHandler } from "./browserx-types.js";

export type * from "./browserx-types.js";

export interface BrowserxTool {
  definition: BrowserxToolDefinition;
  handler: BrowserxToolHandler;
}

export interface BrowserxTools {
  llmCache: BrowserxTool;
  browserStorage: BrowserxTool;
}

export interface BrowserxToolsOptions {
  /**
   * The agent's task id for a call, if it keeps one; items of one task then share the taskId part of their
   * keys. browserx's context carries none, so by default items get a generated one.
   */
  taskId?: (context: BrowserxToolContext) => string | undefined;
  /** Where browser_storage keeps its data; chrome.storage by default. */
  browserStorage?: BrowserStorageOptions;
}

export function browserxTools(cache: Pick<LlmCache, "tool">, options: BrowserxToolsOptions = {}): BrowserxTools {
  const legacy = new BrowserStorageTool(options.browserStorage);
  return {
    llmCache: {
      definition: browserxDefinition(STORAGE_TOOL_SPEC),
      handler: async (parameters, context) => {
        const outcome = await cache.tool.run(parameters, { sessionId: context.sessionId, taskId: options.taskId?.(context) });
        if (!outcome.ok) throw new Error(outcome.text);
        return outcome.text;
      },
    },
    browserStorage: {
      definition: legacy.definition,
      handler: (parameters) => legacy.execute(parameters),
    },
  };
}

/** A ToolSpec as browserx's ToolDefinition: plain JSON Schema types, enums spelled out in words. */
export function browserxDefinition(spec: ToolSpec): BrowserxToolDefinition {
  const properties: Record<string, BrowserxJsonSchema> = {};
  for (const [name, parameter] of Object.entries(spec.parameters)) {
    const choices = parameter.enum ? ` One of: ${parameter.enum.join(", ")}.` : "";
    properties[name] = { type: parameter.type, description: parameter.description + choices };
  }
  return {
    type: "function",
    function: {
      name: spec.name,
      description: spec.description,
      strict: false,
      parameters: { type: "object", properties, required: [...spec.required], additionalProperties: false },
    },
  };
}
