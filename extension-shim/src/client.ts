/**
 * The native client under a second path, so that extensions that import it from "./client.js" keep working:
 * NativeCacheClient lives in backends/native.ts, and the interface every backend implements in backend.ts.
 */

export * from "./backends/native.js";
