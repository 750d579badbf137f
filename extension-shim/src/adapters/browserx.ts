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
 * - The name is an option, so that ours can sit beside another llm_cache (browserx's branch 011-storage-cache
 *   has its own). browserx's register throws on a taken name, and its registerTools then skips every tool
 *   after it; registerBrowserxTools checks both names first and says which option to change.
 * - browserx checks parameter types before any handler runs, and answers an object sent as `data` with only
 *   "Parameter validation failed": so the definition says, beside `data`, that this message means an object
 *   was sent where text belongs (BROWSERX_DATA_NOTE).
 */

import type { LlmCache } from "../llm-cache.js";
import { BrowserStorageTool, type BrowserStorageOptions } from "../legacy/browser-storage.js";
import { toolSpec, type ToolNameOption, type ToolSpec } from "../tool/spec.js";
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

export interface BrowserxToolsOptions extends ToolNameOption {
  /**
   * The agent's task id for a call, if it keeps one; items of one task then share the taskId part of their
   * keys. browserx's context carries none, so by default items get a generated one.
   */
  taskId?: (context: BrowserxToolContext) => string | undefined;
  /** Where browser_storage keeps its data; chrome.storage by default. */
  browserStorage?: BrowserStorageOptions;
}

/**
 * What browserx's ToolRegistry offers for registering: `register`, and `getTool`, which answers null for a free
 * name. A registry without getTool is still accepted; its refusal is then caught and explained.
 */
export interface BrowserxRegistry {
  register(definition: BrowserxToolDefinition, handler: BrowserxToolHandler): Promise<void>;
  getTool?(name: string): unknown;
}

/**
 * The cache tool's name, and browser_storage's, for `registry.register`. The cache tool is called as the
 * `name` option says; by default, as `cache.tool` is named (llm_cache unless createLlmCache got a name).
 */
export function browserxTools(cache: Pick<LlmCache, "tool">, options: BrowserxToolsOptions = {}): BrowserxTools {
  const legacy = new BrowserStorageTool(options.browserStorage);
  const tool = cache.tool.named(options.name);
  return {
    llmCache: {
      definition: browserxDefinition(toolSpec({ name: tool.name })),
      handler: async (parameters, context) => {
        const outcome = await tool.run(parameters, { sessionId: context.sessionId, taskId: options.taskId?.(context) });
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

/**
 * Registers the cache tool and browser_storage with browserx's registry, or neither. Both names are checked
 * first: browserx's register throws on a taken name, and its registerTools then skips every tool registered
 * after it, so a clash is caught here, with an Error that says which option picks another name.
 */
export async function registerBrowserxTools(
  registry: BrowserxRegistry,
  cache: Pick<LlmCache, "tool">,
  options: BrowserxToolsOptions = {},
): Promise<BrowserxTools> {
  const tools = browserxTools(cache, options);
  const pairs = [tools.llmCache, tools.browserStorage];
  for (const { definition } of pairs) {
    const taken = registry.getTool?.(definition.function.name);
    if (taken !== undefined && taken !== null) throw nameTaken(definition.function.name);
  }
  for (const { definition, handler } of pairs) {
    try {
      await registry.register(definition, handler);
    } catch (error) {
      if (error instanceof Error && /already registered/.test(error.message)) throw nameTaken(definition.function.name, error);
      throw error;
    }
  }
  return tools;
}

function nameTaken(name: string, cause?: Error): Error {
  const advice =
    name === "browser_storage"
      ? "browser_storage takes the place of browserx's own StorageTool: leave that one out of registerTools"
      : `pass another name, e.g. registerBrowserxTools(registry, cache, { name: "host_cache" }), and the same ` +
        `name to the prompt (createLlmCache({ name }) does both), or leave browserx's own llm_cache out of ` +
        `registerTools (its 011-storage-cache branch adds one); extension-shim/README.md says how to choose`;
  return new Error(`a tool named '${name}' is already registered with browserx's ToolRegistry: ${advice}`, cause ? { cause } : undefined);
}

/**
 * Added to `data`'s description for browserx, whose check of parameter types answers an object there with only
 * "Error: Parameter validation failed", before our handler could say more.
 */
export const BROWSERX_DATA_NOTE = ' "Parameter validation failed" usually means data was an object: send its JSON text.';

/** A ToolSpec as browserx's ToolDefinition: plain JSON Schema types, enums spelled out in words. */
export function browserxDefinition(spec: ToolSpec): BrowserxToolDefinition {
  const properties: Record<string, BrowserxJsonSchema> = {};
  for (const [name, parameter] of Object.entries(spec.parameters)) {
    const choices = parameter.enum ? ` One of: ${parameter.enum.join(", ")}.` : "";
    const note = name === "data" ? BROWSERX_DATA_NOTE : "";
    properties[name] = { type: parameter.type, description: parameter.description + choices + note };
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
