/**
 * The native client's old home, kept so that `import … from "./client.js"` keeps working: NativeCacheClient
 * lives in backends/native.ts, and the interface every backend implements in backend.ts.
 */

export * from "./backends/native.js";
