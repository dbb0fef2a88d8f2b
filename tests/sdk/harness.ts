// Test harness for the generated TypeScript retry table, compiled by tests/sdk/conftest.py with `tsc --strict`
// next to a copy of generated/typescript/retry-policy.ts and of the conformance JSON files, which it reads as
// they are (no second copy of the vectors is written for it).
// It checks the types and the freezing on its own, and prints its answers to the shared vectors as JSON, which
// the Python test compares with the expected outcomes.

import {
  DECISIONS,
  FAILURE_KINDS,
  type FailureKind,
  type IdempotencyKey,
  idempotencyKeyProblem,
  isValidIdempotencyKey,
  lookup,
  mayResend,
  type MessageKind,
  RETRY_CLASSES,
  RETRY_TABLE,
  type RetryClass,
} from "./retry-policy";

// Node's module loader parses the JSON files; declaring `require` here spares the harness a type package.
declare const require: (name: string) => unknown;
interface KeyFile {
  readonly vectors: readonly { readonly name: string; readonly value: unknown }[];
  readonly comparisons: readonly { readonly a: string; readonly b: string }[];
}
interface DecisionFile {
  readonly cases: readonly {
    readonly method: string;
    readonly kind: string;
    readonly variant: string | null;
    readonly failure: string;
    readonly errorCode: number | null;
    readonly hasKey: boolean;
    readonly allowDuplicates: boolean;
  }[];
}
// The compiled harness runs from out/, the JSON files sit one level up.
const KEY_FILE = require("../idempotency-key.json") as KeyFile;
const KEY_VECTORS = KEY_FILE.vectors;
const COMPARISONS = KEY_FILE.comparisons;
const DECISION_CASES = (require("../retry-decisions.json") as DecisionFile).cases;

// -- types: these lines only compile if the table keeps its literal types and stays read-only ------------------
const promptClass: "keyed" = RETRY_TABLE["session/prompt"].request.retryClass;
const promptKey: "idempotencyKey" = RETRY_TABLE["session/prompt"].request.keyParam;
const keyedOnLostAnswer: "with-key" = DECISIONS.keyed["no-response"];
// Never called: these statements only have to fail to type-check (tsc reports an unused @ts-expect-error).
export function mustNotCompile(): void {
  // @ts-expect-error: the table is read-only
  RETRY_TABLE["session/prompt"].request.retryClass = "safe";
  // @ts-expect-error: a kind that the entry does not have is not in its type
  void RETRY_TABLE["session/prompt"].notification;
  // @ts-expect-error: failure kinds are a closed set
  mayResend("session/prompt", "request", "timeout", true);
}

// A narrowing check: after the guard the value is a branded key, and an invalid string stays a string.
function keyOrNothing(value: string | null): IdempotencyKey | null {
  if (isValidIdempotencyKey(value)) {
    return value;
  }
  const stillString: string | null = value;
  return stillString === null ? null : null;
}

// -- run time: every table is frozen, all the way down --------------------------------------------------------
function deeplyFrozen(value: unknown): boolean {
  if (typeof value !== "object" || value === null) {
    return true;
  }
  return Object.isFrozen(value) && Object.values(value).every(deeplyFrozen);
}

const checks: Record<string, boolean> = {
  literalTypes: promptClass === "keyed" && promptKey === "idempotencyKey" && keyedOnLostAnswer === "with-key",
  tablesFrozen: [RETRY_TABLE, DECISIONS, RETRY_CLASSES, FAILURE_KINDS].every(deeplyFrozen),
  noPrototypeLookups: ["constructor", "__proto__", "toString", "hasOwnProperty"].every(
    (name) => lookup(name, "request") === undefined,
  ),
  narrowing: keyOrNothing("k") === "k" && keyOrNothing("") === null,
};
let writeRejected = false;
try {
  (RETRY_TABLE as unknown as Record<string, unknown>)["session/prompt"] = null;
} catch {
  writeRejected = true; // modules compiled from TypeScript run in strict mode, where writing a frozen object throws
}
checks["writeRejected"] = writeRejected;

// -- answers to the shared vectors ----------------------------------------------------------------------------
const isKind = (value: string): value is MessageKind => value === "request" || value === "notification";
const isFailure = (value: string): value is FailureKind => (FAILURE_KINDS as readonly string[]).includes(value);
const isClass = (value: string): value is RetryClass => (RETRY_CLASSES as readonly string[]).includes(value);

const keys = KEY_VECTORS.map((vector) => {
  const valid = isValidIdempotencyKey(vector.value);
  return { held: true, valid, reason: idempotencyKeyProblem(vector.value) };
});
const decisions = DECISION_CASES.map((c) => {
  if (!isKind(c.kind) || !isFailure(c.failure)) {
    throw new Error(`a case names an unknown kind or failure: ${JSON.stringify(c)}`);
  }
  const base = { allowDuplicates: c.allowDuplicates, errorCode: c.errorCode };
  const options = c.variant === null ? base : { ...base, variant: c.variant };
  const answer = mayResend(c.method, c.kind, c.failure, c.hasKey, options);
  const defaults = c.errorCode === null && !c.allowDuplicates && c.variant === null;
  if (defaults && answer !== mayResend(c.method, c.kind, c.failure, c.hasKey)) {
    throw new Error(`the default options differ from explicit ones: ${JSON.stringify(c)}`);
  }
  return answer;
});
const comparisons = COMPARISONS.map((pair) => pair.a === pair.b);
checks["classNames"] = RETRY_CLASSES.every(isClass);

console.log(JSON.stringify({ checks, keys, decisions, comparisons }));
