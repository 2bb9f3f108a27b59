// Builds the publishable @spool/sdk into packages/sdk/dist (then: `npm pack ./packages/sdk/dist`).
//
// In the repository everything imports the TypeScript sources (`exports: ./src/index.ts`, run through
// tsx); a user's project has neither tsx nor our private workspace packages. So:
//   - dist/index.js: one ESM bundle. @spool/shared and @spool/engine/runner are private (not on the
//     registry), so they are inlined; the SDK's npm dependencies stay imports (the user's npm installs
//     them, and deduplicates them with their own copies of zod, ai, ...).
//   - dist/index.d.ts + dist/types/: declarations emitted by tsc (TS 7 has no compiler API, so no d.ts
//     bundler can run), with the workspace specifiers rewritten to relative paths.
//   - dist/package.json: the published manifest, generated from packages/sdk/package.json.
// It needs no database and takes about a second.
import { spawnSync } from "node:child_process";
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules, createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const sdkDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const rootDir = resolve(sdkDir, "../..");
const dist = join(sdkDir, "dist");
const pkg = JSON.parse(readFileSync(join(sdkDir, "package.json"), "utf8"));
const rootPkg = JSON.parse(readFileSync(join(rootDir, "package.json"), "utf8"));

// Runtime dependencies of the published package: the SDK's own, minus the private workspace ones.
const dependencies = Object.fromEntries(
  Object.entries(pkg.dependencies).filter(([name]) => !name.startsWith("@spool/")),
);
const packageName = (specifier) =>
  specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0];
const isBuiltin = (specifier) => specifier.startsWith("node:") || builtinModules.includes(specifier);

const fail = (message) => {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
};

const started = performance.now();
rmSync(dist, { recursive: true, force: true }); // no stale files from an earlier build in the tarball

// 1. JavaScript. Every bare import that is not @spool/* is left external; the checks after the build
// make sure those are only the declared dependencies, so a leak (bullmq, @prisma/*, @hono/zod-openapi
// reaching the bundle through the engine or the schemas) fails the build instead of the user's install.
const result = await build({
  absWorkingDir: sdkDir,
  entryPoints: ["src/index.ts"],
  outfile: "dist/index.js",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  sourcemap: true, // sources embedded; with `node --enable-source-maps`, stack traces show our .ts files
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
  plugins: [
    {
      name: "external-npm-deps",
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) =>
          args.path.startsWith("@spool/") ? undefined : { path: args.path, external: true },
        );
      },
    },
  ],
});

const output = result.metafile.outputs["dist/index.js"];
const imported = [...new Set(output.imports.map((i) => i.path))].sort();
const undeclared = imported.filter((p) => !isBuiltin(p) && !(packageName(p) in dependencies));
if (undeclared.length > 0) fail(`dist/index.js imports undeclared packages: ${undeclared.join(", ")}`);
// Inlined code must come from our own sources only: the SDK, shared, and the engine's DB-free runner
// (@spool/* resolve through node_modules symlinks to packages/). packages/db is not among them, and
// the engine's main entry would show up above as imports of bullmq, ioredis, @opentelemetry/*.
const ownSources = ["sdk", "shared", "engine"].map((p) => join(rootDir, "packages", p) + sep);
const foreign = Object.keys(output.inputs).filter(
  (p) => p.includes("node_modules") || !ownSources.some((dir) => resolve(sdkDir, p).startsWith(dir)),
);
if (foreign.length > 0) fail(`dist/index.js inlines files from elsewhere: ${foreign.join(", ")}`);

// 2. Declarations. tsconfig.build.json maps @spool/shared and @spool/engine/runner to their sources
// (so tsc emits them too, under dist/types/{shared,engine}/...), but tsc keeps the bare specifiers in
// the output; we rewrite them to relative paths.
const tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc");
const emitted = spawnSync(process.execPath, [tsc, "-p", join(sdkDir, "tsconfig.build.json")], {
  stdio: "inherit",
});
if (emitted.status !== 0) fail("tsc failed");

const typesDir = join(dist, "types");
const workspaceTypes = {
  "@spool/shared": join(typesDir, "shared/src/index.js"),
  "@spool/engine/runner": join(typesDir, "engine/src/runner/index.js"),
};
const declarationFiles = readdirSync(typesDir, { recursive: true })
  .filter((f) => f.endsWith(".d.ts"))
  .map((f) => join(typesDir, f));
for (const file of declarationFiles) {
  let text = readFileSync(file, "utf8");
  // Both `from "@spool/shared"` and `import("@spool/shared")` forms.
  text = text.replace(/(["'])(@spool\/[^"']+)\1/g, (_match, quote, specifier) => {
    const target = workspaceTypes[specifier];
    if (!target) fail(`${relative(dist, file)}: unexpected ${specifier}`);
    let path = relative(dirname(file), target).split(sep).join("/");
    if (!path.startsWith(".")) path = `./${path}`;
    return `${quote}${path}${quote}`;
  });
  // shared's schemas use `z` from @hono/zod-openapi, which is zod's own `z` re-exported (with an
  // `.openapi()` method patched in at run time). Their declarations only name zod types, so they
  // import `z` from zod instead, and the package needs no @hono/zod-openapi (nor hono) for types.
  text = text.replaceAll('import { z } from "@hono/zod-openapi";', 'import { z } from "zod";');
  if (text.includes("@hono/")) fail(`${relative(dist, file)} still refers to @hono/*`);
  writeFileSync(file, text);
}
writeFileSync(join(dist, "index.d.ts"), 'export * from "./types/sdk/src/index.js";\n');

// 3. The published manifest: no `private`, no workspace dependencies, no scripts.
const manifest = {
  name: pkg.name,
  version: pkg.version,
  description:
    "Spool SDK: define durable workflows, agents and tools, run them, and serve them from a worker",
  license: rootPkg.license,
  type: "module",
  main: "./index.js",
  types: "./index.d.ts",
  exports: { ".": { types: "./index.d.ts", default: "./index.js" }, "./package.json": "./package.json" },
  files: ["index.js", "index.js.map", "index.d.ts", "types", "README.md"],
  engines: rootPkg.engines,
  dependencies: Object.fromEntries(Object.entries(dependencies).sort(([a], [b]) => a.localeCompare(b))),
};
writeFileSync(join(dist, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
cpSync(join(sdkDir, "README.md"), join(dist, "README.md"));

const kb = (bytes) => `${(bytes / 1024).toFixed(1)} kB`;
process.stdout.write(
  `built ${relative(rootDir, dist)} in ${Math.round(performance.now() - started)} ms: index.js ${kb(output.bytes)}, ` +
    `${declarationFiles.length} declaration files; imports: ${imported.join(", ")}\n`,
);
