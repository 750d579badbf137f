/**
 * The cache viewer (viewer.html): this extension's sessions; a session's items, a page at a time; an item's
 * data at a JSON pointer, a page at a time; ending a session and deleting an item, each after a confirm step.
 *
 * It reaches the cache through `createLlmCache().client`, the RoutingBackend the agent uses, so it sees exactly
 * what this extension's agent sees (the host keeps every extension's items apart by its origin) and finds each
 * session on the backend that holds it. What it shows is in the URL's fragment (viewer-route.ts). Every string
 * is put in the page as text, bidi and invisible characters escaped (dom.ts, visible.ts): descriptions and data
 * are written by an LLM and other tools. Data is laid out without recursion, in text proportional to the page
 * (pretty.ts), so any item the cache holds shows, however deep; its metadata and Delete button show even if it
 * can't.
 *
 * Every item says where it came from (provenance-text.ts): its origin and source, what it was made from, its
 * endorsement, and whether the agent's tool fences its text as untrusted; a session's items filter by origin and
 * trust, and an item's view shows the exact text the model reads for it.
 *
 * The session list uses the client's `sessions` op where the shim has it; without it the viewer opens a session
 * by its id (typed in, or in the URL: viewer.html#session=<id>), and everything else works the same.
 *
 * Above every view, one sentence says which backend keeps the cache (backend-text.ts): with no host installed,
 * the normal case, that the cache is kept in the browser, not the host's failure as an error.
 */

import { createLlmCache, type LlmCache } from "../llm-cache.js";
import { ORIGINS, type CachedItem, type CacheMetadata, type JsonValue, type Slice } from "../protocol.js";
import type { CacheStatus } from "../status.js";
import { formatAge, formatSize, itemCount } from "../tool/format.js";
import { shortKey } from "../tool/keys.js";
import { DEFAULT_MAX_READ_BYTES, modelTextOf } from "../tool/storage-tool.js";
import { servedBy } from "./backend-text.js";
import { checkPagesConfig, extensionName, loadPagesConfig, type PagesConfig } from "./config.js";
import { button, el, errorLine, laidOut, show, when, type Child } from "./dom.js";
import { jsonText } from "./pretty.js";
import { originText, passes, trustWord } from "./provenance-text.js";
import { escapeControls } from "./visible.js";
import { childPointer, parseRoute, pointerTrail, routeHash, type Route } from "./viewer-route.js";

/** Items per page of a session. */
export const ITEMS_PAGE = 20;
/** Sessions per page of the session list. */
export const SESSIONS_PAGE = 50;
/** The most bytes of JSON text one page of an item's data shows (the read's `maxBytes`). */
export const DATA_PAGE_BYTES = 16 * 1024;
/** Items read per page while a filter is on: the page shows those of them that pass. */
export const FILTERED_PAGE = 100;
/** The most "open a part" links under one page of data. */
const MAX_PART_LINKS = 200;

/**
 * The developer's settings (config.ts: the viewer uses the extension's name, and the host name for its own cache),
 * and the page's cache and links.
 */
export interface ViewerOptions extends PagesConfig {
  /** The cache to show; a `createLlmCache({ hostName })` of the page's own by default. */
  cache?: LlmCache;
  /** Where the "install page" link goes; the install page beside this one by default. */
  installUrl?: string;
}

/** Renders the view the URL names into `root`, and the next one whenever the fragment changes. */
export async function mountViewer(root: HTMLElement, options: ViewerOptions = {}): Promise<void> {
  const { cache, installUrl, ...settings } = options;
  const config = checkPagesConfig(settings, "mountViewer's options");
  const name = extensionName(config);
  document.title = `${name}: LLM cache viewer`;
  const own = () => createLlmCache(config.hostName === undefined ? {} : { hostName: config.hostName });
  const viewer = new Viewer(root, cache ?? own(), installUrl ?? "install.html", name);
  window.addEventListener("hashchange", () => void viewer.render());
  await viewer.render();
}

class Viewer {
  readonly #cache: LlmCache;
  /** Which backend serves, asked once when the page opens; a view that lists sessions waits for it. */
  readonly #status: Promise<CacheStatus | undefined>;
  readonly #trail: HTMLElement;
  readonly #message: HTMLElement;
  readonly #main: HTMLElement;
  readonly #root: HTMLElement;
  /** Counts renders, so that a slow answer for a view the user has already left is dropped. */
  #generation = 0;

  constructor(root: HTMLElement, cache: LlmCache, installUrl: string, name: string) {
    this.#root = root;
    this.#cache = cache;
    this.#trail = el("nav", { id: "trail" });
    this.#message = el("p", { id: "message", role: "status" });
    this.#main = el("div", { id: "view" });
    const backend = el("p", { id: "backend" });
    this.#status = cache.status().then(
      (status) => {
        show(backend, servedBy(status).sentence);
        return status;
      },
      (error: unknown) => {
        show(backend, "Which backend serves can't be read: ", errorLine(error));
        return undefined;
      },
    );
    show(
      root,
      el("header", {}, el("h1", {}, `${name}: LLM cache viewer`), el("a", { href: installUrl, id: "install-link" }, "Install page")),
      backend,
      this.#trail,
      this.#message,
      this.#main,
    );
  }

  /** Shows the view of the current URL. */
  async render(): Promise<void> {
    const route = parseRoute(location.hash);
    const generation = ++this.#generation;
    this.#root.dataset.loading = "true";
    this.#renderTrail(route);
    try {
      if (route.session && route.key) await this.#itemView(route.session, route.key, route.pointer ?? "", generation);
      else if (route.session) await this.#sessionView(route, generation);
      else await this.#sessionsView(generation);
    } catch (error) {
      if (generation === this.#generation) show(this.#main, el("p", { class: "error" }, errorLine(error)));
    } finally {
      if (generation === this.#generation) delete this.#root.dataset.loading;
    }
  }

  /** Says what the last action did (or why it failed), until the next one. */
  #say(text: string, kind: "done" | "error" = "done"): void {
    this.#message.className = kind;
    show(this.#message, text);
  }

  #renderTrail(route: Route): void {
    const parts: Child[] = [el("a", { href: "#" }, "All sessions")];
    if (route.session) parts.push(" › ", el("a", { href: routeHash({ session: route.session }) }, route.session));
    if (route.session && route.key) parts.push(" › ", el("a", { href: routeHash(route) }, shortKey(route.key, route.session)));
    show(this.#trail, ...parts);
  }

  // The session list.

  async #sessionsView(generation: number, cursors: Array<string | undefined> = [undefined]): Promise<void> {
    const input = el("input", { id: "session-input", type: "text", placeholder: "conv_…", "aria-label": "Session id", size: 40 });
    const form = el("form", { id: "open-session" }, el("label", {}, "Open a session by its id: ", input), " ", el("button", { type: "submit" }, "Open"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (input.value.trim()) location.hash = routeHash({ session: input.value.trim() });
    });
    const cursor = cursors[cursors.length - 1];
    const [page, status] = await Promise.all([
      this.#cache.client.sessions(cursor === undefined ? { limit: SESSIONS_PAGE } : { limit: SESSIONS_PAGE, cursor }),
      this.#status,
    ]);
    if (generation !== this.#generation) return;
    // A host that isn't used can't list sessions either: the sentence above the view has said so, calmly.
    const hostUnused = status !== undefined && status.backend !== "host";
    const unlisted = page.unlisted.filter(({ backend }) => !(backend === "host" && hostUnused));
    const now = Date.now();
    const rows = page.sessions.map((session) =>
      el(
        "tr",
        { "data-session": session.sessionId },
        el("td", {}, el("a", { href: routeHash({ session: session.sessionId }) }, session.sessionId)),
        el("td", { class: "number" }, session.itemCount),
        el("td", { class: "number" }, formatSize(session.totalSize)),
        el("td", {}, when(session.createdAt, now)),
        el("td", {}, when(session.lastAccessedAt, now)),
        el("td", {}, session.backend ?? ""),
      ),
    );
    show(
      this.#main,
      el("h2", {}, "Sessions"),
      // A backend that couldn't list its sessions (the host down, or too old for the op) is named, not hidden.
      ...unlisted.map(({ backend, error }) =>
        el("p", { class: "unlisted" }, `The ${backend === "host" ? "native host" : "in-browser store"}'s sessions can't be listed: ${errorLine(error)}`),
      ),
      page.sessions.length === 0 && cursors.length === 1
        ? el("p", { id: "no-sessions" }, "This extension has no cached sessions.")
        : el(
            "table",
            { id: "sessions" },
            el("thead", {}, el("tr", {}, ...["Session", "Items", "Size", "Created", "Last used", "Backend"].map((name) => el("th", {}, name)))),
            el("tbody", {}, ...rows),
          ),
      this.#pager(cursors, page.nextCursor, (next) => this.#sessionsView(this.#generation, next)),
      form,
    );
  }

  // One session's items.

  async #sessionView(route: Route, generation: number, cursors: Array<string | undefined> = [undefined]): Promise<void> {
    const sessionId = route.session ?? "";
    const client = this.#cache.client;
    const cursor = cursors[cursors.length - 1];
    const filtered = route.origin !== undefined || route.trust !== undefined;
    // A filter reads more items per page, so that a page of the few that pass is rarely empty.
    const limit = filtered ? FILTERED_PAGE : ITEMS_PAGE;
    const [stats, page] = await Promise.all([
      client.stats(sessionId),
      client.list(cursor === undefined ? { sessionId, limit } : { sessionId, limit, cursor }),
    ]);
    if (generation !== this.#generation) return;
    const now = Date.now();
    const reload = () => this.#sessionView(route, this.#generation, cursors);
    const first = (cursors.length - 1) * limit;
    const shown = page.items.filter((item) => passes(item.provenance, route.origin, route.trust));
    const summary = el(
      "p",
      { id: "session-summary" },
      `${itemCount(stats.itemCount)}, ${formatSize(stats.totalSize)} of ${formatSize(stats.quotaBytes)}` +
        ` · created ${when(stats.createdAt, now)} · last used ${when(stats.lastAccessedAt, now)} · ${stats.backend === "host" ? "native host" : "in the browser (IndexedDB)"}`,
    );
    const endBox = el("div", { class: "confirm-box" });
    const askEnd = () =>
      show(
        endBox,
        el("span", { class: "confirm" }, `End session ${sessionId}: delete its ${itemCount(stats.itemCount)}?`),
        " ",
        button("End session", () => this.#endSession(sessionId, reload), { id: "confirm-end", class: "danger" }),
        " ",
        button("Cancel", () => show(endBox, endButton), { id: "cancel-end" }),
      );
    const endButton = button("End session…", askEnd, { id: "end-session" });
    // A session holds items or doesn't exist (PROTOCOL.md 4.8): an empty one has nothing to end.
    if (stats.itemCount > 0) show(endBox, endButton);

    const rows = shown.map((item) => this.#itemRow(item, now, reload));
    const range = `${first + 1}–${first + page.items.length} of ${page.itemCount}`;
    const caption = filtered ? `${itemCount(shown.length)} of items ${range} pass the filter, newest first` : `Items ${range}, newest first`;
    show(
      this.#main,
      el("h2", {}, "Session ", el("code", {}, sessionId)),
      summary,
      endBox,
      filterForm(route),
      shown.length === 0
        ? el("p", { id: "no-items" }, filtered && page.items.length > 0 ? `None of items ${range} pass the filter.` : "No items.")
        : el(
            "table",
            { id: "items" },
            el("caption", {}, caption),
            el("thead", {}, el("tr", {}, ...["Key", "Size", "Age", "Shape", "Description", "From", "Trust", ""].map((name) => el("th", {}, name)))),
            el("tbody", {}, ...rows),
          ),
      this.#pager(cursors, page.nextCursor, (next) => this.#sessionView(route, this.#generation, next)),
    );
  }

  #itemRow(item: CacheMetadata, now: number, reload: () => Promise<void>): HTMLElement {
    const key = shortKey(item.storageKey, item.sessionId);
    const actions = el("td", { class: "row-actions" });
    const askDelete = () =>
      show(
        actions,
        el("span", { class: "confirm" }, "Delete?"),
        " ",
        button("Delete", () => this.#deleteItem(item, reload), { class: "danger confirm-delete" }),
        " ",
        button("Cancel", () => show(actions, deleteButton), { class: "cancel-delete" }),
      );
    const deleteButton = button("Delete…", askDelete, { class: "delete" });
    show(actions, deleteButton);
    return el(
      "tr",
      { "data-key": item.storageKey },
      el("td", { class: "key" }, el("a", { href: routeHash({ session: item.sessionId, key: item.storageKey }), title: item.storageKey }, key)),
      el("td", { class: "number" }, formatSize(item.dataSize)),
      el("td", { class: "number", title: when(item.timestamp, now) }, `${formatAge(now - item.timestamp)} ago`),
      el("td", { class: "shape" }, item.shape || "?"),
      el("td", { class: "description" }, item.description),
      el("td", { class: "from", title: item.provenance.source?.url ?? null }, originText(item.provenance)),
      el("td", { class: `trust ${trustWord(item.provenance)}` }, trustWord(item.provenance)),
      actions,
    );
  }

  async #endSession(sessionId: string, after: () => Promise<void>): Promise<void> {
    const outcome = await this.#cache.endSession(sessionId);
    if (outcome.status === "ended") {
      this.#say(`Ended session ${sessionId}: ${itemCount(outcome.deletedItems)} deleted, ${formatSize(outcome.freedBytes)} freed.`);
    } else if (outcome.status === "pending") {
      this.#say(`Session ${sessionId} will end when its backend can be reached: ${outcome.reason}`, "error");
    } else {
      this.#say(`Session ${sessionId} could not be ended: ${errorLine(outcome.error)}`, "error");
    }
    await after();
  }

  async #deleteItem(item: CacheMetadata, after: () => Promise<void>): Promise<void> {
    try {
      const result = await this.#cache.client.delete({ sessionId: item.sessionId, storageKey: item.storageKey });
      this.#say(
        result.deleted
          ? `Deleted ${shortKey(item.storageKey, item.sessionId)} (${formatSize(result.freedBytes)} freed).`
          : `${shortKey(item.storageKey, item.sessionId)} was already gone.`,
      );
    } catch (error) {
      this.#say(`Could not delete ${shortKey(item.storageKey, item.sessionId)}: ${errorLine(error)}`, "error");
    }
    await after();
  }

  /** Previous and Next buttons over pages named by cursors; `cursors` is the trail of pages so far. */
  #pager(cursors: Array<string | undefined>, nextCursor: string | null, go: (cursors: Array<string | undefined>) => Promise<void>): HTMLElement {
    return el(
      "p",
      { class: "pager" },
      cursors.length > 1 ? button("‹ Previous page", () => go(cursors.slice(0, -1)), { class: "previous" }) : null,
      " ",
      nextCursor !== null ? button("Next page ›", () => go([...cursors, nextCursor]), { class: "next" }) : null,
    );
  }

  // One item's data.

  async #itemView(sessionId: string, storageKey: string, pointer: string, generation: number, offsets: number[] = [0]): Promise<void> {
    const offset = offsets[offsets.length - 1] ?? 0;
    // The first page asks for the budget only, which a number, boolean or null at the pointer also answers.
    const request = { sessionId, storageKey, pointer, maxBytes: DATA_PAGE_BYTES, ...(offset > 0 ? { offset } : {}) };
    // The model's own read of the item, for the text it gets; asked beside the page's.
    const [item, modelText] = await Promise.all([
      this.#cache.client.read(request),
      this.#cache.client.read({ sessionId, storageKey, maxBytes: DEFAULT_MAX_READ_BYTES }).then(
        (whole) => modelTextOf(whole),
        (error: unknown) => `(can't be read: ${errorLine(error)})`,
      ),
    ]);
    if (generation !== this.#generation) return;
    const route = { session: sessionId, key: storageKey };

    const input = el("input", { id: "pointer-input", type: "text", value: pointer, placeholder: "/emails/0/subject", "aria-label": "JSON pointer", size: 40 });
    const form = el("form", { id: "pointer-form" }, el("label", {}, "JSON pointer: ", input), " ", el("button", { type: "submit" }, "Show"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      location.hash = routeHash({ ...route, pointer: input.value });
    });

    const deleteBox = el("div", { class: "confirm-box" });
    const deleteButton = button("Delete item…", () =>
      show(
        deleteBox,
        el("span", { class: "confirm" }, "Delete this item?"),
        " ",
        button("Delete", () => this.#deleteItem(item, async () => void (location.hash = routeHash({ session: sessionId }))), {
          id: "confirm-delete-item",
          class: "danger",
        }),
        " ",
        button("Cancel", () => show(deleteBox, deleteButton)),
      ),
      { id: "delete-item" },
    );
    show(deleteBox, deleteButton);

    const trail = pointerTrail(pointer).flatMap((step, index): Child[] => [
      index === 0 ? null : " / ",
      el("a", { href: routeHash({ ...route, pointer: step.pointer }) }, step.label),
    ]);
    const page = (next: number[]) => this.#itemView(sessionId, storageKey, pointer, this.#generation, next);
    show(
      this.#main,
      el("h2", {}, "Item ", el("code", {}, shortKey(storageKey, sessionId))),
      metadataList(item),
      deleteBox,
      form,
      el("p", { id: "pointer-trail" }, ...trail),
      el("p", { id: "slice-info" }, sliceText(item.data, item.slice, item.dataSize)),
      dataView(item.data),
      el(
        "p",
        { class: "pager" },
        offsets.length > 1 ? button("‹ Previous page", () => page(offsets.slice(0, -1)), { class: "previous" }) : null,
        " ",
        item.slice && item.slice.nextOffset !== null && item.slice.nextOffset !== offset
          ? button("Next page ›", () => page([...offsets, item.slice?.nextOffset ?? 0]), { class: "next" })
          : null,
      ),
      partLinks(item, pointer, route),
      el("h3", {}, "What the model reads"),
      el("p", { class: "checked" }, `The ${this.#cache.tool.name} tool's answer to a read of the whole item, fences included (each answer draws its own fence id).`),
      // Its line breaks kept, and everything else that could hide or reorder text escaped, as on the rest of the page.
      el("pre", { id: "model-text" }, laidOut(modelText.split("\n").map(escapeControls).join("\n"))),
    );
  }
}

function metadataList(item: CachedItem): HTMLElement {
  const rows: Array<[string, string]> = [
    ["Key", item.storageKey],
    ["Description", item.description],
    ["Shape", item.shape || "?"],
    ["Size", formatSize(item.dataSize)],
    ["Written", when(item.timestamp)],
    ["Task / turn", `${item.taskId} / ${item.turnId}`],
  ];
  if (item.customMetadata !== undefined) rows.push(["Custom metadata", compact(item.customMetadata)]);
  const provenance = item.provenance;
  rows.push(["From", originText(provenance)], ["Trust", trustWord(provenance)]);
  // The URL as text, never a link: a page the agent read may be one the user should not open by a click.
  if (provenance.source?.url !== undefined) rows.push(["Source URL", provenance.source.url]);
  if (provenance.source?.tool !== undefined) rows.push(["Source tool", provenance.source.tool]);
  if (provenance.endorsed) rows.push(["Endorsed", `${when(provenance.endorsed.at)}: ${provenance.endorsed.reason}`]);
  const derived = (provenance.derivedFrom ?? []).flatMap((key, index): Child[] => [
    index === 0 ? null : ", ",
    el("a", { href: routeHash({ session: item.sessionId, key }), title: key }, shortKey(key, item.sessionId)),
  ]);
  return el(
    "dl",
    { id: "item-metadata" },
    ...rows.flatMap(([name, value]) => [el("dt", {}, name), el("dd", { "data-field": name }, value)]),
    derived.length === 0 ? null : el("dt", {}, "Made from"),
    derived.length === 0 ? null : el("dd", { "data-field": "Made from" }, ...derived),
  );
}

/** The session view's filters, by origin and by trust; choosing one goes to its address. */
function filterForm(route: Route): HTMLElement {
  const choice = <T extends string>(name: string, label: string, values: readonly T[], current: T | undefined) => {
    const select = el("select", { id: `filter-${name}`, "aria-label": label }, el("option", { value: "" }, `any ${name}`), ...values.map((value) => el("option", { value, selected: value === current }, value)));
    select.addEventListener("change", () => {
      location.hash = routeHash({ ...route, [name]: select.value || undefined });
    });
    return select;
  };
  return el(
    "p",
    { id: "filters" },
    "Show items of ",
    choice("origin", "Origin", ORIGINS, route.origin),
    " that are ",
    choice("trust", "Trust", ["trusted", "untrusted"] as const, route.trust),
  );
}

/** The page of data, laid out; or why it can't be, in its place, so that the rest of the item's view still shows. */
function dataView(data: JsonValue): HTMLElement {
  try {
    return el("pre", { id: "data" }, laidOut(jsonText(data)));
  } catch (error) {
    return el("p", { id: "data", class: "error" }, "The data can't be shown: ", errorLine(error));
  }
}

/** `value` as compact JSON text, or why it can't be. */
function compact(value: JsonValue): string {
  try {
    return jsonText(value, 0);
  } catch (error) {
    return `(can't be shown: ${errorLine(error)})`;
  }
}

/** Where this page of data lies in the value: "elements 20–39 of 120", or that it is the whole value. */
function sliceText(data: JsonValue, slice: Slice | undefined, dataSize: number): string {
  if (!slice) return `The whole value (the item's data is ${formatSize(dataSize)}).`;
  const unit = Array.isArray(data) ? "elements" : typeof data === "string" ? "characters" : "members";
  if (slice.count === 0 && slice.nextOffset === slice.offset) {
    return `The ${unit.slice(0, -1)} at ${slice.offset} alone is longer than a page (${formatSize(DATA_PAGE_BYTES)}): open it below, or with a longer pointer.`;
  }
  return `${unit[0]?.toUpperCase()}${unit.slice(1)} ${slice.offset}–${slice.offset + slice.count - 1} of ${slice.total}, a page of at most ${formatSize(DATA_PAGE_BYTES)}.`;
}

/** Links to the elements or members shown, so the user can go into them; for an oversized element, to it. */
function partLinks(item: CachedItem, pointer: string, route: Route): HTMLElement | null {
  const data = item.data;
  const offset = item.slice?.offset ?? 0;
  let tokens: Array<string | number>;
  if (Array.isArray(data)) {
    tokens = data.length === 0 && item.slice?.count === 0 && item.slice.nextOffset === offset ? [offset] : data.map((_, index) => offset + index);
  } else if (typeof data === "object" && data !== null) {
    tokens = Object.keys(data);
  } else {
    return null;
  }
  if (tokens.length === 0) return null;
  const shown = tokens.slice(0, MAX_PART_LINKS);
  return el(
    "div",
    { id: "parts" },
    el("h3", {}, "Open a part"),
    el(
      "ul",
      { class: "parts" },
      ...shown.map((token) => el("li", {}, el("a", { href: routeHash({ ...route, pointer: childPointer(pointer, token) }) }, String(token)))),
    ),
    tokens.length > shown.length ? el("p", {}, `…and ${tokens.length - shown.length} more; name one with the pointer above.`) : null,
  );
}

const pageRoot = typeof document === "undefined" ? null : document.getElementById("llm-cache-viewer");
if (pageRoot) {
  loadPagesConfig()
    .then((config) => mountViewer(pageRoot, config))
    .catch((error: unknown) => {
      show(pageRoot, el("h1", {}, "LLM cache viewer"), el("p", { class: "error" }, "This page failed: ", errorLine(error)));
    });
}
