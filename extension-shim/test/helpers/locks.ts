import { tryLock } from "../../src/locks.js";

/**
 * Whether the lock `name` could be taken exclusively now, once what was under way has run its course: a lease let
 * go is released a few promise steps later, and setImmediate runs after all of them (and is left alone by mocked
 * timers).
 */
export async function lockIsFree(name: string): Promise<boolean> {
  await new Promise((settled) => setImmediate(settled));
  return (await tryLock(name, "exclusive", async () => "free")) === "free";
}
