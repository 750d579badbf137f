/**
 * How the StorageTool names items: the ids it puts into a write, and the short keys it shows the LLM.
 *
 * A storage key is `{sessionId}_{taskId}_{turnId}` (PROTOCOL.md section 5.1). The sessionId is the same for
 * every item the LLM can reach, so the tool shows only `{taskId}_{turnId}` and puts the session back in front
 * when the LLM passes that short key. With conversation ids of 41 characters that saves 42 bytes per listed item.
 */

/** The host's grammar for taskId and turnId. */
const KEY_ID = /^[a-z0-9]{8}$/;

/**
 * The taskId to write under for the agent's task id. An id that already fits the host's grammar is used as it
 * is; any other (a UUID, say) is hashed to 8 characters, so that one task's items still share a taskId.
 */
export function keyIdFor(agentId: string): string {
  if (KEY_ID.test(agentId)) return agentId;
  // FNV-1a, 64 bits: short, deterministic, and spread well enough to keep different tasks apart.
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(agentId)) {
    hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(36).padStart(8, "0").slice(-8);
}

/** The key as the LLM sees it: without the session prefix. */
export function shortKey(storageKey: string, sessionId: string): string {
  const prefix = `${sessionId}_`;
  return storageKey.startsWith(prefix) ? storageKey.slice(prefix.length) : storageKey;
}

/** The key as the host needs it. Full keys (which start with "conv_") pass through unchanged. */
export function fullKey(key: string, sessionId: string): string {
  return key.startsWith("conv_") ? key : `${sessionId}_${key}`;
}
