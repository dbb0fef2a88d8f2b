// Run hey-api on one ACP JSON Schema file the way the TypeScript SDK (@agentclientprotocol/sdk 2.4.0) feeds it,
// so tests/sdk_pipelines/ can type-check what comes out and bench/bench_sdk_generators.py can time it.
//
//   node generate.mjs SCHEMA.json OUT_DIR [--meta META.json] [--format]
//
// What the SDK's generate step does before and around hey-api, in our words:
// - the schema's `$defs` become an OpenAPI 3.1 document's `components.schemas`, each `#/$defs/X` reference
//   pointing at `#/components/schemas/X`;
// - a description that carries the `**UNSTABLE**` marker gets a trailing `@experimental` tag, which hey-api
//   copies into the JSDoc of the type or property;
// - a `discriminator` beside `anyOf` is dropped (hey-api would read it as allOf inheritance);
// - three plugins run: zod (v4 API, date-times that may carry an offset), transformers (no bigint or Date
//   conversion) and the TypeScript types;
// - with `--format`: hey-api's prettier post-processor (`output.postProcess: ["prettier"]`, the spelling 0.99 gives
//   the SDK's deprecated `output.format: "prettier"`) rewrites every emitted file with the pinned prettier, found
//   on PATH as `npm run` would put it there; prettier reads its configuration from the output's directories up,
//   so the caller puts the SDK's (a `.prettierrc` of `{}`: the defaults) in the working directory, as
//   tests/sdk_pipelines/typescript_sdk.py does;
// - with `--meta META.json`: the method-name maps of the meta file (one `as const` object per side it lists:
//   AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS, PROXY_METHODS) and PROTOCOL_VERSION are formatted with
//   prettier's API and appended to index.ts after a blank line.
// Not reproduced: the SDK's own zod resolvers for lenient parsing and its type-guard file, which are SDK code
// (tests/sdk_pipelines/guard_shape.py checks the union shape that guard step needs instead); its check that the
// meta file lists the schema's methods (tests/sdk_pipelines/meta.py states that rule); its text edits of the
// emitted files after hey-api (such as making hey-api's `ClientOptions` type module-private); downloading the schema.
// Without `--format` the output is hey-api's own layout: the tests use that faster run.
import { appendFile, readFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createClient } from "@hey-api/openapi-ts";
import { transformers, typescript, zod } from "@hey-api/openapi-ts/plugins";

const UNSTABLE_MARKER = "**UNSTABLE**";
const DEFS_PREFIX = "#/$defs/";
// The meta file's map per side, and the constant the SDK names it in index.ts, in the SDK's order.
const META_CONSTANTS = [
  ["agentMethods", "AGENT_METHODS"],
  ["clientMethods", "CLIENT_METHODS"],
  ["protocolMethods", "PROTOCOL_METHODS"],
  ["proxyMethods", "PROXY_METHODS"],
];
const USAGE = "usage: node generate.mjs SCHEMA.json OUT_DIR [--meta META.json] [--format]";

let args;
try {
  args = parseArgs({
    allowPositionals: true,
    options: { format: { type: "boolean", default: false }, meta: { type: "string" } },
  });
} catch (error) {
  console.error(`${error.message}\n${USAGE}`);
  process.exit(2);
}
const [schemaPath, outDir] = args.positionals;
if (!schemaPath || !outDir || args.positionals.length > 2) {
  console.error(USAGE);
  process.exit(2);
}
const { format, meta: metaPath } = args.values;
// Read before hey-api runs, so a bad meta file stops the run before anything is written.
const metadata = metaPath === undefined ? null : JSON.parse(await readFile(metaPath, "utf8"));

const schema = JSON.parse(await readFile(schemaPath, "utf8"));

// Each object of the document, parents before children.
function* objects(node) {
  if (Array.isArray(node)) {
    for (const item of node) yield* objects(item);
  } else if (node !== null && typeof node === "object") {
    yield node;
    for (const child of Object.values(node)) yield* objects(child);
  }
}

for (const node of objects(schema)) {
  if (typeof node.$ref === "string" && node.$ref.startsWith(DEFS_PREFIX)) {
    node.$ref = `#/components/schemas/${node.$ref.slice(DEFS_PREFIX.length)}`;
  }
  const text = node.description;
  if (typeof text === "string" && text.includes(UNSTABLE_MARKER) && !text.includes("@experimental")) {
    node.description = `${text}\n\n@experimental`;
  }
  if (Array.isArray(node.anyOf) && "discriminator" in node) delete node.discriminator;
}

if (format) {
  // hey-api spawns `prettier` by name; `npm run generate` in the SDK finds it in node_modules/.bin, and so do we.
  const bin = fileURLToPath(new URL("node_modules/.bin", import.meta.url));
  process.env.PATH = [bin, process.env.PATH].filter(Boolean).join(delimiter);
}

await createClient({
  input: {
    openapi: "3.1.0",
    info: { title: "Agent Client Protocol", version: "2.0.0" },
    components: { schemas: schema.$defs ?? {} },
  },
  output: { path: outDir, postProcess: format ? ["prettier"] : [] },
  plugins: [
    zod({ compatibilityVersion: 4, dates: { offset: true } }),
    transformers({ bigInt: false, dates: false }),
    typescript(),
  ],
  logs: { level: "silent" },
});

if (metadata !== null) {
  const prettier = await import("prettier");
  const constants = META_CONSTANTS.filter(([key]) => key in metadata).map(
    ([key, name]) => `export const ${name} = ${JSON.stringify(metadata[key], null, 2)} as const;\n`,
  );
  constants.push(`export const PROTOCOL_VERSION = ${JSON.stringify(metadata.version)};\n`);
  const block = await prettier.format(constants.join("\n"), { parser: "typescript" });
  await appendFile(join(outDir, "index.ts"), `\n${block}`);
}
