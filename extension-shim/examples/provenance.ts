// The provenance sample that README.md's "Where items come from" shows, type-checked: everything between the
// two marker lines is in the README word for word (test/readme.test.ts).
import { createLlmCache } from "@browserx/llm-cache-shim";

type Context = { sessionId: string };
declare const fetchPageHandler: (args: { url: string }, context: Context) => Promise<string>;
declare const sendEmailHandler: (args: { to: string[]; body: string }, context: Context) => Promise<string>;
declare const sessionId: string;
declare const storageKey: string;
declare const notes: string;
const cache = createLlmCache();

// README sample begins
// A tool's results, labelled (without the option they are {origin: "tool", source: {tool: "fetch_page"}}).
const fetchPage = cache.offloadLargeResults("fetch_page", fetchPageHandler, {
  provenance: (args) => ({ origin: "web", source: { url: args.url } }),
});
// A tool the cache doesn't wrap put a web page in front of the model.
await cache.noteContextOrigin(sessionId, "web");
// The extension's own writes may say anything, and only its code can vouch for an item.
await cache.client.write({ sessionId, data: notes, description: "the user's notes", provenance: { origin: "user" } });
await cache.client.endorse({ sessionId, storageKey, reason: "the user approved it in the side panel" });
// Where cached data leaves: no untrusted text among an email's recipients.
const sendEmail = cache.withReferences(sendEmailHandler, {
  tool: "send_email",
  allowFlow: (flow) => flow.trusted || !/^\/to(\/|$)/.test(flow.argumentPath) || "recipients must come from the user",
});
// README sample ends

export { fetchPage, sendEmail };
