// A service worker can be reached through DevTools before its script has run: a brand-new worker sits in
// state "parsed" while its module loads, and the globals the script defines are not there yet. This waits,
// inside the worker, until `globalThis[name]` exists; no polling: it listens for the worker's own statechange
// ("installing" comes only after the script has been evaluated).

/** Runs in the service worker. Resolves when globalThis[name] is defined; rejects if the script ran without defining it. */
export function whenGlobalDefined(name) {
  const me = self.serviceWorker; // ServiceWorkerGlobalScope.serviceWorker (Chrome 116+)
  return new Promise((resolve, reject) => {
    const check = () => {
      if (globalThis[name] !== undefined) {
        me?.removeEventListener("statechange", check);
        resolve(me?.state ?? "unknown");
      } else if (!me || me.state !== "parsed") {
        me?.removeEventListener("statechange", check);
        reject(
          new Error(
            me?.state === "redundant"
              ? `the service worker's script failed (it threw, or a module it imports is missing or threw), so globalThis.${name} is not defined`
              : `the service worker's script has run (state ${me?.state}) but did not define globalThis.${name}`,
          ),
        );
      }
    };
    me?.addEventListener("statechange", check);
    check();
  });
}
