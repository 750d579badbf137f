/** The mapper from error replies to classes: one class per protocol code, with the reply's details kept. */

import assert from "node:assert/strict";
import { it } from "node:test";
import * as errors from "../src/errors.js";
import { CacheError, ERROR_CODES, errorFromReply, QuotaExceededError, StorageUnavailableError } from "../src/errors.js";

it("maps every protocol code to the class of the same name, keeping message, expected, actual and suggestion", () => {
  for (const code of ERROR_CODES) {
    const error = errorFromReply({ code, message: `m ${code}`, expected: "e", actual: 7, suggestion: "s" });
    const cls = (errors as unknown as Record<string, new (...args: never[]) => CacheError>)[code];
    assert.ok(cls, `no class ${code}`);
    assert.equal(error.constructor, cls);
    assert.ok(error instanceof CacheError && error instanceof Error);
    assert.equal(error.name, code);
    assert.equal(error.code, code);
    assert.equal(error.message, `m ${code}`);
    assert.equal(error.expected, "e");
    assert.equal(error.actual, 7);
    assert.equal(error.suggestion, "s");
  }
});

it("keeps the quota numbers of QuotaExceededError", () => {
  const error = errorFromReply({
    code: "QuotaExceededError",
    message: "over",
    suggestion: "delete",
    current: 47185923,
    limit: 52428800,
    requested: 5242880,
  });
  assert.ok(error instanceof QuotaExceededError);
  assert.deepEqual([error.current, error.requested, error.limit], [47185923, 5242880, 52428800]);
});

it("treats a code it doesn't know, or a missing error object, as the cache being unavailable", () => {
  const unknown = errorFromReply({ code: "BrandNewError", message: "new", suggestion: "s" });
  assert.ok(unknown instanceof StorageUnavailableError);
  assert.match(unknown.message, /BrandNewError/);
  assert.ok(errorFromReply(undefined) instanceof StorageUnavailableError);
});

it("gives client-made errors the code whose advice fits", () => {
  assert.equal(new errors.RequestTimeoutError("read", 50).code, "StorageUnavailableError");
  assert.equal(new errors.ProtocolVersionError(1, 2).code, "StorageUnavailableError");
  assert.equal(new errors.MessageTooLargeError(70_000_000).code, "DataTooLargeError");
  assert.match(new errors.ProtocolVersionError(1, 2).suggestion, /without the cache/);
});
