// Run the zod validators hey-api generated (zod.gen.ts, as the TypeScript SDK's generate step makes them) over a
// batch of JSON-RPC messages, for tests/sdk_pipelines/test_corpus_validators.py: one node process for the whole
// batch and every schema source.
//
//   node zod_corpus.mjs < REQUEST.json > ANSWER.json
//
// REQUEST: {"sources": {NAME: PATH of a zod.gen.ts, ...}, "validators": [NAME, ...], "messages": [VALUE, ...]}.
// Each zod.gen.ts is turned into JavaScript beside itself (types stripped with the pinned TypeScript's
// transpileModule: no type check, which the pipeline tests do elsewhere) and imported; it imports `zod`, which
// resolves through the node_modules its folder or a parent sees.
// ANSWER: {NAME of source: [[VERDICT per validator] per message]}, where VERDICT is null when the source has no such
// validator, else {"ok": true, "dropped": [PATH, ...]} (the members of the message the parsed value no longer
// has, each as a JSON-pointer-like path: zod objects strip keys they do not declare, so a union member picked by
// mistake shows here) or {"ok": false, "issue": TEXT}.
import { readFile, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import ts from "typescript";

async function stdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function load(path) {
  const source = await readFile(path, "utf8");
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  const target = path.replace(/\.ts$/, ".corpus.mjs");
  await writeFile(target, outputText);
  return import(pathToFileURL(target).href);
}

// The paths of `input` that `output` lacks: a member of an object that is gone, or an array item cut off.
function dropped(input, output, path, found) {
  if (Array.isArray(input)) {
    if (!Array.isArray(output)) return void found.push(path || "/");
    input.forEach((item, index) => {
      if (index >= output.length) found.push(`${path}/${index}`);
      else dropped(item, output[index], `${path}/${index}`, found);
    });
  } else if (input !== null && typeof input === "object") {
    if (output === null || typeof output !== "object" || Array.isArray(output)) return void found.push(path || "/");
    for (const [key, value] of Object.entries(input)) {
      if (!Object.hasOwn(output, key)) found.push(`${path}/${key}`);
      else dropped(value, output[key], `${path}/${key}`, found);
    }
  }
  return found;
}

function verdict(validator, message) {
  if (validator === undefined || typeof validator.safeParse !== "function") return null;
  const parsed = validator.safeParse(message);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, issue: `${issue.path.join(".") || "(top)"}: ${issue.message}` };
  }
  return { ok: true, dropped: dropped(message, parsed.data, "", []) };
}

const request = JSON.parse(await stdin());
const answer = {};
for (const [name, path] of Object.entries(request.sources)) {
  const module = await load(path);
  answer[name] = request.messages.map((message) => request.validators.map((v) => verdict(module[v], message)));
}
process.stdout.write(JSON.stringify(answer));
