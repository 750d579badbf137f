/**
 * `hello`: the handshake, answered as the host answers it (protocol version, ops, limits) plus `backend`, which
 * says that the in-browser store serves. The twin of the host's `src/cmd/hello.rs`.
 */

import {
  MAX_DERIVED_FROM,
  MAX_DESCRIPTION_CHARS,
  MAX_ITEM_BYTES,
  MAX_QUERY_BYTES,
  MAX_QUERY_WORDS,
  MAX_READ_MANY_BYTES,
  MAX_REPLY_FRAME_BYTES,
  MAX_REQUEST_BYTES,
  MAX_SEARCH_POINTER_BYTES,
  MAX_SOURCE_TOOL_CHARS,
  MAX_SOURCE_URL_CHARS,
  PROTOCOL_VERSION,
  SESSION_QUOTA_BYTES,
} from "../../../protocol.js";
import { decodeString, elements } from "../json/index.js";
import type { Fields } from "../message.js";
import { HostError, quote } from "../error.js";
import { OPS } from "./mod.js";

/**
 * The version `hello` reports as `hostVersion`: the shim's own (its package.json's), since the shim is what
 * answers here; for bug reports.
 */
export const IDB_HOST_VERSION = "0.1.0";

/** A parsed `hello`: whether the client decodes gzip replies. */
export interface Hello {
  gzip: boolean;
}

/** Reads `encodings`: the reply encodings the client decodes, e.g. `["gzip"]`; others are ignored. */
export function parseHello(fields: Fields): Hello {
  const raw = fields.encodings;
  if (raw === undefined) return { gzip: false };
  const wrong = () => HostError.invalidField("encodings", 'an array of strings such as ["gzip"]', "something else");
  if (!raw.startsWith("[")) throw wrong();
  let gzip = false;
  let strings = true;
  elements(raw, (start, end) => {
    const value = raw.charCodeAt(start) === 0x22 ? decodeString(raw.slice(start + 1, end - 1)) : undefined;
    if (value === undefined) strings = false;
    if (value === "gzip") gzip = true;
    return strings;
  });
  if (!strings) throw wrong();
  return { gzip };
}

/**
 * `hello`'s result, with the store-wide quota in force. It says `"encoding": "gzip"` when asked, as the host does, but this store never sends a
 * compressed reply: compressing costs time and saves nothing when the reply doesn't cross a pipe, and PROTOCOL.md
 * section 3.5 has clients take any reply as it comes.
 */
export function helloJson(hello: Hello, storeQuota: number): string {
  const limits =
    `{"maxItemBytes":${MAX_ITEM_BYTES},"sessionQuotaBytes":${SESSION_QUOTA_BYTES},"storeQuotaBytes":${storeQuota},` +
    `"maxDescriptionChars":${MAX_DESCRIPTION_CHARS},` +
    `"maxReplyFrameBytes":${MAX_REPLY_FRAME_BYTES},"maxRequestFrameBytes":${MAX_REQUEST_BYTES},` +
    `"maxReadManyBytes":${MAX_READ_MANY_BYTES},"maxQueryWords":${MAX_QUERY_WORDS},"maxQueryBytes":${MAX_QUERY_BYTES},` +
    `"maxSearchPointerBytes":${MAX_SEARCH_POINTER_BYTES},"maxSourceUrlChars":${MAX_SOURCE_URL_CHARS},` +
    `"maxSourceToolChars":${MAX_SOURCE_TOOL_CHARS},"maxDerivedFrom":${MAX_DERIVED_FROM}}`;
  const ops = `[${OPS.map(quote).join(",")}]`;
  const encoding = hello.gzip ? `,"encoding":"gzip"` : "";
  return `{"protocolVersion":${PROTOCOL_VERSION},"hostVersion":${quote(IDB_HOST_VERSION)},"ops":${ops},"limits":${limits}${encoding},"backend":"indexeddb"}`;
}
