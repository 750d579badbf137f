/**
 * The cache viewer's address: what it shows is in the URL's fragment, so a view can be linked, reloaded, and
 * left with the browser's Back button. `#session=<id>` is a session's items, with `&key=<storageKey>` one item's
 * data, with `&pointer=<JSON pointer>` a part of it; `&origin=<origin>` and `&trust=trusted|untrusted` filter a
 * session's items. Pure, so the tests check it without a browser.
 */

import { ORIGINS, type Origin } from "../protocol.js";

export interface Route {
  session?: string;
  key?: string;
  /** An RFC 6901 pointer into the item's data; "" (the whole data) when absent. */
  pointer?: string;
  /** Only a session's items of this origin (one of protocol.ts's ORIGINS). */
  origin?: Origin;
  /** Only a session's trusted (endorsed included) or untrusted items. */
  trust?: "trusted" | "untrusted";
}

/** The route a fragment ("#session=…&key=…") names; an empty route for anything else. */
export function parseRoute(hash: string): Route {
  const params = new URLSearchParams(hash.startsWith("#") ? hash.slice(1) : hash);
  const route: Route = {};
  const session = params.get("session");
  if (session) route.session = session;
  const key = params.get("key");
  if (session && key) route.key = key;
  const pointer = params.get("pointer");
  if (route.key && pointer) route.pointer = pointer;
  const origin = ORIGINS.find((name) => name === params.get("origin"));
  if (session && !route.key && origin) route.origin = origin;
  const trust = params.get("trust");
  if (session && !route.key && (trust === "trusted" || trust === "untrusted")) route.trust = trust;
  return route;
}

/** The fragment for `route`, "#" and all; "#" alone for the session list. */
export function routeHash(route: Route): string {
  const params = new URLSearchParams();
  if (route.session) params.set("session", route.session);
  if (route.session && route.key) params.set("key", route.key);
  if (route.session && route.key && route.pointer) params.set("pointer", route.pointer);
  if (route.session && !route.key && route.origin) params.set("origin", route.origin);
  if (route.session && !route.key && route.trust) params.set("trust", route.trust);
  return `#${params.toString()}`;
}

/** The pointer to `token` (a member name or an array index) inside the value at `pointer` (RFC 6901 escaping). */
export function childPointer(pointer: string, token: string | number): string {
  return `${pointer}/${String(token).replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

/** Each ancestor of `pointer`, the whole data first: [{label, pointer}], labels unescaped, for a breadcrumb trail. */
export function pointerTrail(pointer: string): Array<{ label: string; pointer: string }> {
  const trail = [{ label: "data", pointer: "" }];
  if (!pointer.startsWith("/")) return trail;
  let at = "";
  for (const token of pointer.slice(1).split("/")) {
    at += `/${token}`;
    trail.push({ label: token.replace(/~1/g, "/").replace(/~0/g, "~"), pointer: at });
  }
  return trail;
}
