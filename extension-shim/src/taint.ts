/**
 * A session's taint: the origins of everything untrusted the shim has put in front of the model in a
 * conversation, and the keys of the items it read, so that what the model writes next says what it was made
 * from (`{origin: "agent", upstream, derivedFrom}`).
 *
 * What feeds it: a read, a preview or a search snippet of an untrusted item (the tool), every result an
 * offloaded tool returns, large or small (offload.ts), and `noteContextOrigin` for the tools the extension
 * didn't wrap. It only grows within a session, and is cleared when the session ends. It is kept in the
 * extension's KeyValueStore, one key per session, written only when it grows and read once per instance, so a
 * rebuilt service worker doesn't forget that the model has seen a web page.
 *
 * Fail closed: until the extension wires anything (an offloaded tool, a `noteContextOrigin` call, or the
 * `contextOrigins` option saying what else its tools put in context), the shim can't know what the model has
 * seen, and the model's items carry upstream `unknown`, which is untrusted.
 */

import { MAX_DERIVED_FROM, ORIGINS, TRUSTED_ORIGINS, type Origin, type ProvenanceInput } from "./protocol.js";
import type { KeyValueStore } from "./storage-area.js";

/** Where a session's taint is kept in the KeyValueStore: this prefix and the sessionId. */
export const TAINT_KEY_PREFIX = "llmCacheTaint:";

const TRUSTED = new Set<Origin>(TRUSTED_ORIGINS);

/** One session's taint as kept. */
interface SessionTaint {
  /** Untrusted origins the model has seen, in ORIGINS order. */
  origins: Origin[];
  /** Full storage keys of the items read, oldest first, the newest MAX_DERIVED_FROM. */
  keys: string[];
}

export interface ContextTaintOptions {
  /** Where taints outlive the service worker; kept in memory only when absent. */
  storage?: KeyValueStore | undefined;
  /**
   * The origins of what the agent's tools put in context beyond what the shim sees (tools not wrapped with
   * offloadLargeResults), added to every session's taint: `[]` says there is nothing else. Giving it, like
   * wrapping a tool or calling noteContextOrigin, ends the default of `unknown`.
   */
  contextOrigins?: readonly Origin[] | undefined;
}

export class ContextTaint {
  readonly #storage: KeyValueStore | undefined;
  readonly #baseline: readonly Origin[];
  #wired: boolean;
  /** Each session's taint, loaded once from the storage. */
  readonly #sessions = new Map<string, Promise<SessionTaint>>();

  constructor(options: ContextTaintOptions = {}) {
    this.#storage = options.storage;
    this.#baseline = options.contextOrigins ?? [];
    this.#wired = options.contextOrigins !== undefined;
  }

  /** Says that the extension reports what enters the context (it wrapped a tool, or noted an origin). */
  markWired(): void {
    this.#wired = true;
  }

  /**
   * Adds origins the model has seen in the session, and the keys of the items it read. Trusted origins add
   * nothing: the model's own text, the user's and the extension's raise no flag.
   */
  async note(sessionId: string, origins: readonly Origin[], keys: readonly string[] = []): Promise<void> {
    const taint = await this.#load(sessionId);
    const before = JSON.stringify(taint);
    const seen = new Set<Origin>([...taint.origins, ...origins.filter((origin) => !TRUSTED.has(origin))]);
    taint.origins = ORIGINS.filter((origin) => seen.has(origin));
    for (const key of keys) {
      const at = taint.keys.indexOf(key);
      if (at !== -1) taint.keys.splice(at, 1);
      taint.keys.push(key);
    }
    taint.keys.splice(0, Math.max(0, taint.keys.length - MAX_DERIVED_FROM));
    if (JSON.stringify(taint) === before) return;
    try {
      await this.#storage?.set({ [TAINT_KEY_PREFIX + sessionId]: { origins: taint.origins, keys: [...taint.keys] } });
    } catch {
      // The taint still holds in memory for this context's life; a failing storage must not fail the tool call
      // (or the offloaded tool) that showed the model the text.
    }
  }

  /** The provenance of what the model writes in the session now: its own text, made from what it has seen. */
  async agentProvenance(sessionId: string): Promise<ProvenanceInput> {
    const taint = await this.#load(sessionId);
    const seen = new Set<Origin>([...taint.origins, ...this.#baseline.filter((origin) => !TRUSTED.has(origin))]);
    if (!this.#wired) seen.add("unknown");
    const upstream = ORIGINS.filter((origin) => seen.has(origin));
    return {
      origin: "agent",
      ...(upstream.length > 0 ? { upstream } : {}),
      ...(taint.keys.length > 0 ? { derivedFrom: [...taint.keys] } : {}),
    };
  }

  /** Forgets a session's taint, when the session ends: its next life starts clean. */
  async clear(sessionId: string): Promise<void> {
    this.#sessions.delete(sessionId);
    await this.#storage?.remove(TAINT_KEY_PREFIX + sessionId);
  }

  #load(sessionId: string): Promise<SessionTaint> {
    let taint = this.#sessions.get(sessionId);
    if (taint === undefined) {
      taint = this.#read(sessionId);
      this.#sessions.set(sessionId, taint);
    }
    return taint;
  }

  async #read(sessionId: string): Promise<SessionTaint> {
    const key = TAINT_KEY_PREFIX + sessionId;
    try {
      return sessionTaint(this.#storage === undefined ? undefined : (await this.#storage.get(key))[key]);
    } catch {
      // What the model saw before can't be known: fail closed.
      return { origins: ["unknown"], keys: [] };
    }
  }
}

/**
 * A kept taint, checked member by member: anything else kept under the key (another version's record, a
 * hand edit) taints the session as `unknown` rather than clearing it.
 */
function sessionTaint(kept: unknown): SessionTaint {
  if (kept === undefined) return { origins: [], keys: [] };
  const record = typeof kept === "object" && kept !== null ? (kept as Partial<Record<keyof SessionTaint, unknown>>) : {};
  const origins = Array.isArray(record.origins) ? record.origins.filter((o): o is Origin => ORIGINS.includes(o as Origin)) : [];
  const keys = Array.isArray(record.keys) ? record.keys.filter((k): k is string => typeof k === "string").slice(-MAX_DERIVED_FROM) : [];
  const wellFormed = Array.isArray(record.origins) && origins.length === record.origins.length;
  return { origins: wellFormed ? origins : [...new Set<Origin>([...origins, "unknown"])], keys };
}
