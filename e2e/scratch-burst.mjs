import { launchOverPipe } from "./lib/cdp-pipe.mjs";
import { DEMO_GLOBAL } from "./lib/demo-agent.mjs";
import { DEMO_EXTENSION_DIR } from "./lib/env.mjs";
import { createSandbox, installHost } from "./lib/sandbox.mjs";
const sandbox = createSandbox("scratch");
installHost(sandbox);
const browser = await launchOverPipe(sandbox, DEMO_EXTENSION_DIR, { globalName: DEMO_GLOBAL });
try {
  const fn = async () => {
    const routed = globalThis.llmCache.client;
    const alone = globalThis.llmCache.createLlmCache({ fallback: false }).client;
    const text = "x".repeat(780);
    const phases = { routed: { first: [], write: [], list: [], read: [], end: [] }, alone: { first: [], write: [], list: [], read: [], end: [] } };
    for (let round = 0; round < 31; round++) {
      for (const [name, cache] of round % 2 ? [["routed", routed], ["alone", alone]] : [["alone", alone], ["routed", routed]]) {
        const sessionId = `conv_burst-${name}-${round}`;
        let t = performance.now();
        const t0 = t;
        const mark = (phase) => { const now = performance.now(); phases[name][phase].push(now - t); t = now; };
        let firstAt;
        const keys = await Promise.all(Array.from({ length: 50 }, (_, n) => cache.write({ sessionId, data: text, description: `S ${n}` }).then((r) => { firstAt ??= performance.now() - t0; return r; })));
        phases[name].first.push(firstAt);
        mark("write");
        await cache.list({ sessionId, limit: 50 });
        mark("list");
        await cache.readMany({ sessionId, storageKeys: keys.slice(0, 10).map((k) => k.storageKey) });
        mark("read");
        await cache.endSession(sessionId);
        mark("end");
      }
    }
    const med = (a) => +a.slice(1).sort((x, y) => x - y)[a.length >> 1].toFixed(2);
    return Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, Object.fromEntries(Object.entries(v).map(([p, a]) => [p, med(a)]))]));
  };
  console.log(await browser.evaluate(`(${fn})()`, { timeoutMs: 600000, what: "x" }));
} finally { await browser.close(); await sandbox.cleanup(); }
