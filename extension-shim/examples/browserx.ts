/**
 * Stands for browserx's own modules in the integration sample (browserx-integration.ts): its ToolRegistry
 * (src/tools/ToolRegistry.ts) and Session (src/core/Session.ts), declared with the members the sample uses,
 * typed as browserx types them. Session is a class the sample passes as a value (attachToSessionClass), as
 * browserx exports it. Only the compiler reads this file.
 */

import type { BrowserxToolDefinition, BrowserxToolHandler } from "../src/adapters/browserx-types.js";

export declare class ToolRegistry {
  register(tool: BrowserxToolDefinition, handler: BrowserxToolHandler): Promise<void>;
}

export declare class Session {
  readonly conversationId: string;
  reset(): Promise<void>;
  close(): Promise<void>;
}
