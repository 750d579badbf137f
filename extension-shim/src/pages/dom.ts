/**
 * The few DOM helpers the pages share. Every string a page shows goes in as a text node: item descriptions,
 * keys, data and error messages are written by the LLM, other tools or the host, and none of it may become
 * markup. Nothing here parses HTML (no innerHTML, no insertAdjacentHTML), and attributes are set one by one.
 *
 * And every string is made visible first (`escapeControls`): a bidi override or an invisible character in a
 * description must not reorder or hide what the user reads. The one text that keeps its line breaks, an item's
 * laid-out data, goes in through `laidOut`, its strings escaped by the printer.
 */

import { formatAge } from "../tool/format.js";
import { escapeControls } from "./visible.js";

/**
 * What an element may hold: nodes, or strings and numbers, which become text nodes with unsafe characters escaped.
 * Empty values are left out.
 */
export type Child = Node | string | number | null | undefined | false;

/** Attributes, set with setAttribute; `null` or `undefined` leaves one out. */
export type Attributes = Record<string, string | number | boolean | null | undefined>;

/** A new element with `attributes` and `children` (strings as text). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    // Handlers are added with addEventListener, and links are built by the pages themselves; these two guards
    // keep a mistake from turning a string into code.
    if (/^on/i.test(name)) throw new TypeError(`el: set ${name} with addEventListener, not as an attribute`);
    if (name === "href" && /^\s*javascript:/i.test(String(value))) throw new TypeError("el: a javascript: link");
    element.setAttribute(name, value === true ? "" : String(value));
  }
  element.append(...nodes(children));
  return element;
}

/** Replaces what `parent` holds with `children` (strings as escaped text). */
export function show(parent: Element, ...children: Child[]): void {
  parent.replaceChildren(...nodes(children));
}

/** A button that runs `onClick`; it is disabled while a promise `onClick` returns is pending. */
export function button(label: string, onClick: () => unknown, attributes: Attributes = {}): HTMLButtonElement {
  const element = el("button", { type: "button", ...attributes }, label);
  element.addEventListener("click", async () => {
    element.disabled = true;
    try {
      await onClick();
    } finally {
      element.disabled = false;
    }
  });
  return element;
}

/** A moment as a person reads it: "3m ago (2025-06-01 14:02:11)". */
export function when(timestamp: number | null | undefined, now = Date.now()): string {
  if (typeof timestamp !== "number") return "—";
  return `${formatAge(now - timestamp)} ago (${localTime(timestamp)})`;
}

/** Year to second, in the browser's time zone. */
export function localTime(timestamp: number): string {
  const date = new Date(timestamp);
  const pad = (n: number) => String(n).padStart(2, "0");
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
  );
}

/** An error as one line of text: its class name (the protocol's error code) and message. */
export function errorLine(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/**
 * A text node of laid-out text, line breaks and indentation kept: for `jsonText`'s output, whose strings are
 * already escaped (inside them a line break is `\n`), so that each of its own line breaks is layout.
 */
export function laidOut(text: string): Text {
  return document.createTextNode(text);
}

function nodes(children: Child[]): Node[] {
  const out: Node[] = [];
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    out.push(typeof child === "string" || typeof child === "number" ? document.createTextNode(escapeControls(String(child))) : child);
  }
  return out;
}
