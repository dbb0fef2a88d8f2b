// Run hey-api on one ACP JSON Schema file the way the TypeScript SDK (@agentclientprotocol/sdk 2.4.0) feeds it,
// so tests/sdk_pipelines/ can type-check what comes out.
//
//   node generate.mjs SCHEMA.json OUT_DIR
//
// What the SDK's generate step does before and around hey-api, in our words:
// - the schema's `$defs` become an OpenAPI 3.1 document's `components.schemas`, each `#/$defs/X` reference
//   pointing at `#/components/schemas/X`;
// - a description that carries the `**UNSTABLE**` marker gets a trailing `@experimental` tag, which hey-api
//   copies into the JSDoc of the type or property;
// - a `discriminator` beside `anyOf` is dropped (hey-api would read it as allOf inheritance);
// - three plugins run: zod (v4 API, date-times that may carry an offset), transformers (no bigint or Date
//   conversion) and the TypeScript types.
// Not reproduced: the SDK's own zod resolvers for lenient parsing and its type-guard file, which are SDK code;
// tests/sdk_pipelines/guard_shape.py checks the union shape that guard step needs instead.
import { readFile } from "node:fs/promises";
import { createClient } from "@hey-api/openapi-ts";
import { transformers, typescript, zod } from "@hey-api/openapi-ts/plugins";

const UNSTABLE_MARKER = "**UNSTABLE**";
const DEFS_PREFIX = "#/$defs/";

const [schemaPath, outDir] = process.argv.slice(2);
if (!schemaPath || !outDir) {
  console.error("usage: node generate.mjs SCHEMA.json OUT_DIR");
  process.exit(2);
}

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

await createClient({
  input: {
    openapi: "3.1.0",
    info: { title: "Agent Client Protocol", version: "2.0.0" },
    components: { schemas: schema.$defs ?? {} },
  },
  output: { path: outDir },
  plugins: [
    zod({ compatibilityVersion: 4, dates: { offset: true } }),
    transformers({ bigInt: false, dates: false }),
    typescript(),
  ],
  logs: { level: "silent" },
});
