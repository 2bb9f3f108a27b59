// The published package, as a user gets it: build dist/, `npm pack` it, install the tarball into a
// fresh project outside this repository, and use it there with plain `node` (no tsx, no workspace
// packages, no node_modules of the repo on the resolution path) and with `tsc` against its .d.ts.
import { execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { Proc, startSystem } from "../../../test/system/harness.js";

const run = promisify(execFile);
const sdkDir = fileURLToPath(new URL("..", import.meta.url));
const rootDir = resolve(sdkDir, "../..");
const tsc = join(rootDir, "node_modules/typescript/bin/tsc");

// What a user's shell would have: no NODE_OPTIONS (which could carry a tsx loader), no NODE_PATH
// (which could reach the repo's node_modules), and none of the npm_* variables `npm test` sets (a
// nested npm would otherwise inherit this workspace's settings).
const cleanEnv: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([key]) => key !== "NODE_OPTIONS" && key !== "NODE_PATH" && !key.startsWith("npm_"),
  ),
);
const sh = (file: string, args: string[], cwd: string) =>
  run(file, args, { cwd, env: cleanEnv, maxBuffer: 32 * 1024 * 1024 });

const tmp = mkdtempSync(join(tmpdir(), "spool-sdk-pack-"));
/** The consumer project the first test installs the tarball into; the second runs a worker from it. */
const project = join(tmp, "consumer");
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const RUNTIME_DEPENDENCIES = [
  "@ai-sdk/anthropic",
  "@ai-sdk/openai",
  "@ai-sdk/openai-compatible",
  "ai",
  "pino",
  "zod",
];
// Server-side packages the SDK must neither bundle nor need: the remote worker only talks to the API.
const SERVER_ONLY = [
  "@prisma/client",
  "@prisma/adapter-pg",
  "bullmq",
  "ioredis",
  "pg",
  "@hono/zod-openapi",
  "hono",
];

// Written into the consumer project and run with plain node.
const SMOKE_SCRIPT = `
import { createRequire } from "node:module";
import * as sdk from "@spool/sdk";

const require = createRequire(import.meta.url);
const resolvable = (name) => {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
};

const greet = sdk.defineWorkflow({ id: "greet" }, async (ctx, input) => {
  const greeting = await ctx.step.run("make-greeting", () => "Hello, " + input.name);
  return { greeting };
});
const fakeCtx = { step: { run: async (_key, fn) => fn() } };
const client = sdk.createClient({ baseUrl: "http://127.0.0.1:9", apiKey: "sk_test", projectId: "p" });

process.stdout.write(JSON.stringify({
  resolvedFrom: import.meta.resolve("@spool/sdk"),
  types: Object.fromEntries(
    ["createWorker", "createClient", "defineWorkflow", "defineAgent", "defineTool", "defineQueue", "NonRetryableError"]
      .map((name) => [name, typeof sdk[name]]),
  ),
  nonRetryable: new sdk.NonRetryableError("no") instanceof Error,
  workflow: { id: greet.id, isWorkflow: sdk.isWorkflowDefinition(greet), result: await greet.handler(fakeCtx, { name: "Ada" }) },
  clientRuns: typeof client.run,
  resolvable: Object.fromEntries(${JSON.stringify(SERVER_ONLY)}.map((name) => [name, resolvable(name)])),
}));
`;

// Type-checked in the consumer project. The @ts-expect-error lines fail the compile (unused
// directive) if the declarations degrade to `any`.
const CONSUMER_TS = `
import { createWorker, defineWorkflow, type Execution, type WorkflowContext } from "@spool/sdk";

export const wf = defineWorkflow({ id: "greet" }, async (ctx: WorkflowContext, input: { name: string }) => {
  const greeting = await ctx.step.run("make-greeting", () => \`Hello, \${input.name}\`);
  await ctx.step.sleep("pause", "1s");
  return { greeting };
});

export async function startWorker(apiUrl: string, apiKey: string, projectId: string): Promise<string> {
  const worker = await createWorker({ apiUrl, apiKey, projectId, workflows: [wf] });
  // @ts-expect-error apiKey is required
  await createWorker({ apiUrl, projectId, workflows: [wf] });
  // @ts-expect-error port is a number
  await createWorker({ apiUrl, apiKey, projectId, workflows: [wf], port: "8090" });
  return worker.pushUrl;
}

export function statusOf(execution: Execution): string {
  // @ts-expect-error the status is a string union
  const wrong: number = execution.status;
  void wrong;
  return execution.status;
}
`;

describe("@spool/sdk as a published package", () => {
  it("installs from its npm tarball into a project outside the repo and works under plain node, with types", async () => {
    // Build and pack, as a release would.
    await sh(process.execPath, ["scripts/build.mjs"], sdkDir);
    const packDir = join(tmp, "pack");
    mkdirSync(packDir);
    const { stdout: packed } = await sh(
      "npm",
      ["pack", join(sdkDir, "dist"), "--pack-destination", packDir, "--json"],
      sdkDir,
    );
    const [tarball] = JSON.parse(packed) as { filename: string; files: { path: string }[] }[];
    expect(tarball!.files.map((f) => f.path)).toEqual(
      expect.arrayContaining(["package.json", "index.js", "index.d.ts", "README.md"]),
    );
    expect(tarball!.files.filter((f) => f.path.endsWith(".ts") && !f.path.endsWith(".d.ts"))).toEqual([]);

    // A fresh ESM project in the OS temp dir, which shares no node_modules with the repo.
    mkdirSync(project);
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "consumer", private: true, type: "module" }),
    );
    await sh(
      "npm",
      ["install", join(packDir, tarball!.filename), "--prefer-offline", "--no-audit", "--no-fund"],
      project,
    );

    const installed = join(project, "node_modules/@spool/sdk");
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    expect(manifest.private).toBeUndefined();
    expect(Object.keys(manifest.dependencies).sort()).toEqual(RUNTIME_DEPENDENCIES);

    // The bundle imports only its declared dependencies and node builtins, and has none of the
    // server's packages (Prisma, BullMQ, ioredis, pg, the OpenAPI schemas) inlined or imported.
    const bundle = readFileSync(join(installed, "index.js"), "utf8");
    const imports = [...bundle.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]!);
    expect(imports.filter((s) => !s.startsWith("node:") && !RUNTIME_DEPENDENCIES.includes(s))).toEqual([]);
    expect(bundle).not.toMatch(
      /@spool\/|@prisma|bullmq|ioredis|@hono\/zod-openapi|from "pg"|\bimport\(|\brequire\(/,
    );

    // Plain node in the consumer project.
    writeFileSync(join(project, "smoke.mjs"), SMOKE_SCRIPT);
    const { stdout } = await sh(process.execPath, ["smoke.mjs"], project);
    const smoke = JSON.parse(stdout);
    expect(fileURLToPath(smoke.resolvedFrom)).toBe(join(installed, "index.js"));
    expect(smoke.types).toEqual({
      createWorker: "function",
      createClient: "function",
      defineWorkflow: "function",
      defineAgent: "function",
      defineTool: "function",
      defineQueue: "function",
      NonRetryableError: "function",
    });
    expect(smoke.nonRetryable).toBe(true);
    expect(smoke.workflow).toEqual({ id: "greet", isWorkflow: true, result: { greeting: "Hello, Ada" } });
    expect(smoke.clientRuns).toBe("function");
    expect(smoke.resolvable).toEqual(Object.fromEntries(SERVER_ONLY.map((name) => [name, false])));

    // tsc against the installed declarations.
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          target: "ES2022",
          strict: true,
          skipLibCheck: true,
          noEmit: true,
        },
        files: ["consumer.ts"],
      }),
    );
    writeFileSync(join(project, "consumer.ts"), CONSUMER_TS);
    const typecheck = await sh(process.execPath, [tsc, "-p", project], project).catch(
      (error: { stdout?: string; stderr?: string }) => ({
        stdout: `${error.stdout}${error.stderr}`,
        failed: true,
      }),
    );
    expect(typecheck.stdout).toBe("");
    expect("failed" in typecheck).toBe(false);
  }, 180_000);

  it("runs a remote worker from the installed package under plain node, against a running Spool", async () => {
    const sys = await startSystem();
    try {
      writeFileSync(join(project, "worker.mjs"), WORKER_SCRIPT);
      // The worker gets the API's address, a key and the project id; nothing else of ours.
      const env = Object.fromEntries(
        Object.entries(cleanEnv).filter(([k]) => !/DATABASE_URL|REDIS_URL/.test(k)),
      );
      const child = spawn(process.execPath, ["worker.mjs"], {
        cwd: project,
        env: {
          ...env,
          SPOOL_API_URL: sys.apiUrl,
          SPOOL_API_KEY: sys.apiKey,
          SPOOL_PROJECT_ID: sys.projectId,
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const worker = new Proc("packed-worker", child);
      try {
        await worker.waitFor((l) => l.msg === "registered", 60_000);
        const { execution_id } = await sys.client.run("packed-greet", { name: "Ada" });
        const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 30_000 });
        expect(done).toMatchObject({ status: "completed", result: { greeting: "Hello, Ada" } });
        expect((await sys.client.executions.steps(execution_id)).map((s) => [s.step_key, s.kind])).toEqual([
          ["make-greeting", "run"],
          ["pause", "sleep"],
        ]);
      } finally {
        await worker.kill("SIGKILL");
      }
    } finally {
      await sys.stop();
    }
  }, 120_000);
});

// A user's worker process: the installed package, plain node, a 1.5 s durable sleep between steps.
const WORKER_SCRIPT = `
import { createWorker, defineWorkflow } from "@spool/sdk";

const greet = defineWorkflow({ id: "packed-greet" }, async (ctx, input) => {
  const greeting = await ctx.step.run("make-greeting", () => "Hello, " + input.name);
  await ctx.step.sleep("pause", "1500ms");
  return { greeting };
});

await createWorker({
  apiUrl: process.env.SPOOL_API_URL,
  apiKey: process.env.SPOOL_API_KEY,
  projectId: process.env.SPOOL_PROJECT_ID,
  workflows: [greet],
  host: "127.0.0.1",
  heartbeatIntervalSeconds: 1,
});
`;
