// Bounded waits: every wait in the e2e tests is on a promise or event, and none may hang a test.

/** Resolves or rejects as `promise` does, or rejects after `ms` with an error naming `what`. */
export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  // A promise that loses the race may still reject later (e.g. when the browser closes): keep that quiet.
  promise.catch(() => {});
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
