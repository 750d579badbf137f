/**
 * The eight definition variants checked by the providers' own Python SDKs (test/python/validate.py): anthropic's
 * transform_schema and ToolParam, google-genai's t_schema and FunctionDeclaration, openai's strict-schema
 * transform and tool types, openai-agents' ensure_strict_json_schema, and mcp's Tool. The TypeScript SDKs check
 * them in definitions.test.ts; the Python ones differ (anthropic's Python transform asserts on a type list that
 * its TypeScript twin lets through), and integrators use both.
 *
 * The SDKs live in a virtualenv, extension-shim/.venv (gitignored), made with `python3 -m venv` and the pinned
 * versions in test/python/requirements.txt. It is made once and reused while its stamp (the requirements and
 * the Python version) matches; a fresh machine pays one install, about 40 s. LLM_CACHE_PYTHON names another
 * Python 3.9+ to make it with.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { before, it } from "node:test";
import { STORAGE_TOOL_DEFINITIONS } from "../src/tool/definitions.js";

const VENV = fileURLToPath(new URL("../../.venv", import.meta.url));
const REQUIREMENTS = fileURLToPath(new URL("../../test/python/requirements.txt", import.meta.url));
const VALIDATE = fileURLToPath(new URL("../../test/python/validate.py", import.meta.url));
const STAMP = join(VENV, "llm-cache-stamp");
const PYTHON = process.env.LLM_CACHE_PYTHON ?? "python3";
const VENV_PYTHON = join(VENV, "bin", "python");

/** Runs a command to its end; its output is kept for the assertion messages. */
function run(command: string, args: string[]) {
  const result = spawnSync(command, args, { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
  if (result.error) {
    throw new Error(`could not run ${command}: ${result.error.message}. Install Python 3 with venv (Debian: python3-venv), or set LLM_CACHE_PYTHON`);
  }
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Makes the virtualenv unless one with the same stamp is there. */
function ensureVenv(): void {
  const version = run(PYTHON, ["--version"]);
  assert.equal(version.status, 0, `${PYTHON} --version failed: ${version.stderr}`);
  const stamp = `${version.stdout.trim()}\n${readFileSync(REQUIREMENTS, "utf8")}`;
  if (existsSync(STAMP) && existsSync(VENV_PYTHON) && readFileSync(STAMP, "utf8") === stamp) return;
  rmSync(VENV, { recursive: true, force: true });
  const made = run(PYTHON, ["-m", "venv", VENV]);
  assert.equal(made.status, 0, `${PYTHON} -m venv failed (Debian: apt-get install python3-venv):\n${made.stderr}`);
  const pip = run(VENV_PYTHON, ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q", "-r", REQUIREMENTS]);
  assert.equal(pip.status, 0, `pip install -r test/python/requirements.txt failed:\n${pip.stdout}${pip.stderr}`);
  writeFileSync(STAMP, stamp);
}

/** validate.py's verdict on a ToolDefinitions-shaped object. */
function validate(definitions: object) {
  const dir = mkdtempSync(join(tmpdir(), "llm-cache-defs-"));
  try {
    const file = join(dir, "definitions.json");
    writeFileSync(file, JSON.stringify(definitions));
    return run(VENV_PYTHON, [VALIDATE, file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

before(ensureVenv);

it("every variant passes every check of the providers' Python SDKs", () => {
  const { status, stdout, stderr } = validate(STORAGE_TOOL_DEFINITIONS);
  assert.equal(status, 0, `${stdout}${stderr}`);
  assert.match(stdout, /^sdks: anthropic 2\.12\.0, google-genai 3\.4\.0, openai 3\.54\.0, openai-agents 0\.24\.0, mcp 2\.3\.0$/m);
  const passed = stdout.split("\n").filter((line) => line.startsWith("ok "));
  // Every variant is checked, each by its provider's own code and by the schema transforms of the others.
  for (const variant of Object.keys(STORAGE_TOOL_DEFINITIONS)) assert.ok(passed.some((line) => line.startsWith(`ok ${variant}: `)), variant);
  for (const check of [
    "ok anthropicStrict: anthropic transform_schema keeps every keyword",
    "ok anthropicStrict: anthropic ToolParam",
    "ok anthropicStrict: google-genai t_schema",
    "ok openaiResponsesStrict: openai _ensure_strict_json_schema",
    "ok openaiChatStrict: openai-agents ensure_strict_json_schema",
    "ok openaiChatStrict: openai ChatCompletionFunctionToolParam",
    "ok openaiResponses: openai FunctionToolParam",
    "ok gemini: google-genai FunctionDeclaration",
    "ok mcp: mcp Tool",
  ]) {
    assert.ok(passed.includes(check), `missing: ${check}\n${stdout}`);
  }
  assert.equal(passed.length, 27, "every check of every variant ran");
});

// One run with two faults, since each run pays the SDKs' imports (seconds on a busy machine).
it("fails loudly, naming variant and SDK: a nullable as a type list, a field the SDK's tool type doesn't declare", () => {
  const bad = structuredClone(STORAGE_TOOL_DEFINITIONS) as unknown as Record<string, any>;
  const data = bad.anthropicStrict.input_schema.properties.data;
  bad.anthropicStrict.input_schema.properties.data = { type: ["string", "null"], description: data.description };
  bad.openaiResponses.parameter = bad.openaiResponses.parameters;
  const { status, stdout, stderr } = validate(bad);
  assert.equal(status, 1, `${stdout}${stderr}`);
  const failures = stderr.split("\n").filter((line) => line.startsWith("FAIL "));
  assert.deepEqual(
    failures.map((line) => line.replace(/ \(at .*\)$/, "")),
    [
      "FAIL openaiResponses: openai FunctionToolParam: ValueError: openai.types.responses.FunctionToolParam has no field parameter",
      "FAIL anthropicStrict: anthropic transform_schema keeps every keyword: AssertionError: Expected code to be unreachable, but got: ['string', 'null']",
      "FAIL anthropicStrict: google-genai t_schema: AttributeError: 'list' object has no attribute 'upper'",
    ],
  );
  assert.match(failures[1] ?? "", / \(at anthropic\/lib\/_parse\/_transform\.py:\d+\)$/, "where in the SDK");
  assert.match(stderr, /^3 check\(s\) failed: a provider's SDK rejects the definitions above$/m);
  assert.ok(stdout.includes("ok anthropicStrict: anthropic ToolParam"), "the other checks still ran");
});
