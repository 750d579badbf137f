/**
 * browserx's agent lifecycle and model request, standing in for browserx (The-AI-Republic/browserx at 6727ff3)
 * so that tests can wire the shim the way an integrator wires browserx and then drive it the way browserx's own
 * code does. Written from that code's behaviour, around the registry double (browserx-registry.ts):
 * - Session (src/core/Session.ts): a `conv_<uuid>` id made in the constructor; `reset()` clears the history and
 *   replaces the id in place (an assignment over the readonly field), then awaits its rollout record; `close()`
 *   awaits its rollout record and flush and leaves the id alone; `Session.import` makes a new session and then
 *   puts the saved id on it; `getSessionId()` is the current id. reset and close are methods of the class.
 * - BrowserxAgent (src/core/BrowserxAgent.ts): the constructor makes a ToolRegistry and a new Session;
 *   `initialize()` makes a TurnContext and sets its user instructions (loadUserInstructions) and its base
 *   instructions (loadPrompt, which reads prompts/agent_prompt.md); `cleanup()` empties the registry.
 * - The service worker (src/background/service-worker.ts) keeps the agent in one variable: doInitialize builds
 *   an agent, initializes it and registers the tools on its registry; CONFIG_UPDATE closes the current agent's
 *   session, cleans that agent up, builds and initializes a new one and registers the tools again; SESSION_RESET
 *   and the Stop button reset the current agent's session; onSuspend closes it.
 * - A turn (src/core/TurnManager.ts, src/models/OpenAIResponsesClient.ts and PromptHelpers.ts): the prompt holds
 *   the registry's tools, the turn context's base instructions as `base_instructions_override` and its user
 *   instructions; the Responses API request's `instructions` are the override (or, without one, the model
 *   family's own) and the user instructions joined by a newline, and its tools are the function definitions
 *   flattened. Each function_call runs through the registry under the session's current id, and the model
 *   reads `JSON.stringify(data)` or `Error: <message>` in the function_call_output.
 */

import { randomUUID } from "node:crypto";
import { BrowserxStyleRegistry, type ToolDefinition } from "./browserx-registry.js";

/** browserx's PromptLoader (src/core/PromptLoader.ts): the two files its instructions come from. */
export interface PromptLoader {
  /** prompts/agent_prompt.md: the base instructions. The place an integrator adds the cache's section. */
  loadPrompt(): Promise<string>;
  /** prompts/user_instruction.md. */
  loadUserInstructions(): Promise<string>;
}

/** The instructions of a model family, which browserx sends only when the turn has no base instructions. */
export const MODEL_FAMILY_INSTRUCTIONS = "You are a helpful assistant (the model family's own instructions).";

export type ResponseItem =
  | { type: "message"; role: "user" | "assistant"; content: Array<{ type: "input_text" | "output_text"; text: string }> }
  | { type: "function_call"; name: string; arguments: string; call_id: string }
  | { type: "function_call_output"; call_id: string; output: string };

/** The request body browserx's OpenAIResponsesClient posts to the Responses API, with the fields tests read. */
export interface ResponsesRequest {
  model: string;
  instructions: string;
  input: ResponseItem[];
  tools: Array<{ type: "function"; name: string; description: string; strict: boolean; parameters: unknown }>;
  tool_choice: "auto";
  parallel_tool_calls: false;
  stream: true;
  prompt_cache_key: string;
}

/** A scripted model: the output items it answers a request with (function calls, or a final message). */
export type ScriptedModel = (request: ResponsesRequest) => ResponseItem[];

/** What a session records in its rollout; browserx writes these to IndexedDB. */
export type RolloutRecord = { session: string; event: string };

/** browserx's Session, as far as its lifecycle and a turn need it. */
export class BrowserxStyleSession {
  readonly conversationId: string;
  /** The conversation's items, which reset() clears. */
  history: ResponseItem[] = [];
  /** What the session recorded, in order, so tests can see that the original methods still ran. */
  readonly rollout: RolloutRecord[] = [];

  constructor() {
    this.conversationId = `conv_${randomUUID()}`;
  }

  /** A session resumed from storage: made new, then given the saved id, as Session.import does. */
  static import(data: { id: string }): BrowserxStyleSession {
    const session = new BrowserxStyleSession();
    Object.assign(session, { conversationId: data.id });
    return session;
  }

  getSessionId(): string {
    return this.conversationId;
  }

  async reset(): Promise<void> {
    this.history = [];
    // browserx replaces the id before its first await, so a wrapper must read it before calling reset().
    Object.assign(this, { conversationId: `conv_${randomUUID()}` });
    await this.#record(`Session reset: new conversation ${this.conversationId}`);
  }

  async close(): Promise<void> {
    await this.#record(`Session closed: ${this.conversationId} (${this.history.length} messages)`);
  }

  async #record(event: string): Promise<void> {
    await Promise.resolve();
    this.rollout.push({ session: this.conversationId, event });
  }
}

/** The TurnContext's instructions, as BrowserxAgent.initialize sets them. */
export interface TurnContext {
  baseInstructions?: string;
  userInstructions?: string;
}

/** browserx's BrowserxAgent: one registry and one session, made in the constructor. */
export class BrowserxStyleAgent {
  readonly #registry = new BrowserxStyleRegistry();
  readonly #session = new BrowserxStyleSession();
  readonly #prompts: PromptLoader;
  #turnContext: TurnContext | undefined;

  constructor(prompts: PromptLoader) {
    this.#prompts = prompts;
  }

  async initialize(): Promise<void> {
    const turnContext: TurnContext = {};
    turnContext.userInstructions = await this.#prompts.loadUserInstructions();
    turnContext.baseInstructions = await this.#prompts.loadPrompt();
    this.#turnContext = turnContext;
  }

  getSession(): BrowserxStyleSession {
    return this.#session;
  }

  getToolRegistry(): BrowserxStyleRegistry {
    return this.#registry;
  }

  async cleanup(): Promise<void> {
    this.#registry.clear();
  }

  /**
   * A user message and the turns it leads to: each turn is one model request; the function calls it answers
   * with run through the registry, and their outputs go into the next request, until the model answers
   * without a call. Returns every request the model was sent.
   */
  async submit(text: string, model: ScriptedModel): Promise<ResponsesRequest[]> {
    const turnContext = this.#turnContext;
    if (!turnContext) throw new Error("Turn context not initialized");
    const session = this.#session;
    session.history.push({ type: "message", role: "user", content: [{ type: "input_text", text }] });
    const requests: ResponsesRequest[] = [];
    for (;;) {
      const request = responsesRequest(session, turnContext, this.#registry.listTools());
      requests.push(request);
      const calls = model(request).filter((item) => item.type === "function_call");
      if (calls.length === 0) return requests;
      for (const call of calls) {
        session.history.push(call, { type: "function_call_output", call_id: call.call_id, output: await this.#execute(session, call) });
      }
    }
  }

  /** TurnManager.executeToolCall: the arguments parsed, the registry's answer, and what the model reads. */
  async #execute(session: BrowserxStyleSession, call: Extract<ResponseItem, { type: "function_call" }>): Promise<string> {
    try {
      const response = await this.#registry.execute({
        toolName: call.name,
        parameters: JSON.parse(call.arguments),
        sessionId: session.getSessionId(),
        turnId: `turn_${randomUUID()}`,
      });
      if (!response.success) throw new Error(response.error?.message || "Tool execution failed");
      return JSON.stringify(response.data);
    } catch (error) {
      return `Error: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
}

/** The Responses API request for the session's next turn, put together as browserx puts it together. */
function responsesRequest(session: BrowserxStyleSession, turnContext: TurnContext, tools: ToolDefinition[]): ResponsesRequest {
  const instructions = [turnContext.baseInstructions || MODEL_FAMILY_INSTRUCTIONS];
  if (turnContext.userInstructions) instructions.push(turnContext.userInstructions);
  return {
    model: "gpt-5",
    instructions: instructions.join("\n"),
    input: structuredClone(session.history),
    tools: tools.flatMap((tool) =>
      tool.type === "function"
        ? [{ type: "function" as const, name: tool.function.name, description: tool.function.description, strict: tool.function.strict || false, parameters: tool.function.parameters }]
        : [],
    ),
    tool_choice: "auto",
    parallel_tool_calls: false,
    stream: true,
    prompt_cache_key: session.conversationId,
  };
}

/** browserx's service worker: the one agent variable and the handlers that replace, reset and close. */
export class BrowserxStyleServiceWorker {
  agent: BrowserxStyleAgent | undefined;
  readonly #prompts: PromptLoader;
  readonly #registerTools: (registry: BrowserxStyleRegistry) => Promise<void>;

  /** `registerTools` is browserx's src/tools registerTools, where the integrator adds the cache's tools. */
  constructor(prompts: PromptLoader, registerTools: (registry: BrowserxStyleRegistry) => Promise<void>) {
    this.#prompts = prompts;
    this.#registerTools = registerTools;
  }

  /** doInitialize: a new agent (and so a new session), initialized, with its tools. */
  async initialize(): Promise<BrowserxStyleAgent> {
    this.agent = new BrowserxStyleAgent(this.#prompts);
    await this.agent.initialize();
    await this.#registerTools(this.agent.getToolRegistry());
    return this.agent;
  }

  /** CONFIG_UPDATE: the old agent's session closed and the agent cleaned up, then a new agent as at start. */
  async configUpdate(): Promise<BrowserxStyleAgent> {
    if (this.agent) {
      await this.agent.getSession().close();
      await this.agent.cleanup();
    }
    return this.initialize();
  }

  /** SESSION_RESET (and STOP_AGENT_SESSION): the current agent's session reset. */
  async sessionReset(): Promise<void> {
    await this.#current().getSession().reset();
  }

  /** onSuspend: the current agent's session closed and the agent cleaned up. */
  async suspend(): Promise<void> {
    const agent = this.#current();
    await agent.getSession().close();
    await agent.cleanup();
  }

  #current(): BrowserxStyleAgent {
    if (!this.agent) throw new Error("Agent not initialized");
    return this.agent;
  }
}
