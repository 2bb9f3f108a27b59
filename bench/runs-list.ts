// `npm run bench:runs-list [-- --rows 100000] [--reps 200] [--explain] [--browser]`
//
// Is the dashboard's runs list fast on a big project? Starts Postgres + Redis (scripts/services.mjs,
// unless DATABASE_URL / REDIS_URL are given) and one api, seeds `--rows` executions into one fresh
// project with one INSERT … SELECT FROM generate_series, ANALYZEs, then times the requests the runs
// page (apps/dashboard/src/pages/runs.tsx) makes for its first rows: GET /api/v1/executions?limit=50
// with each of its filters, a page 20 next_cursor hops deep, one of the last pages, and GET of one
// run. Prints a Markdown table (p50 / p95 / max in ms, client side, whole response body read) and,
// when some case's p95 is over 50 ms, EXPLAIN (ANALYZE, BUFFERS) of the SQL the engine runs for the
// slowest case (for every case with --explain).
// With --browser, also times headless Chromium from navigation to the first row of the runs table.
import { randomBytes } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import pg from "pg";
import { ensureDashboardBuilt } from "../scripts/build-dashboard.mjs";
import { summarize } from "./stats.js";
import {
  benchServices,
  createProject,
  launch,
  setLogTag,
  stopAllAndExit,
  stopAllOnSignals,
} from "./system.js";

const { values: args } = parseArgs({
  options: {
    rows: { type: "string", default: "100000" },
    reps: { type: "string", default: "200" },
    warmup: { type: "string", default: "20" },
    explain: { type: "boolean", default: false },
    browser: { type: "boolean", default: false },
  },
  strict: true,
});
const ROWS = Number(args.rows);
const REPS = Number(args.reps);
const WARMUP = Number(args.warmup);
if (!Number.isInteger(ROWS) || ROWS < 1_000 || ROWS > 10_000_000) throw new Error("--rows must be 1000..1e7");
if (!Number.isInteger(REPS) || REPS < 1) throw new Error("--reps must be ≥ 1");
if (!Number.isInteger(WARMUP) || WARMUP < 0) throw new Error("--warmup must be ≥ 0");

const PAGE = 50; // the dashboard's PAGE_SIZE
const DEEP_PAGES = 20;
/** A case is worth an EXPLAIN above this p95 (ms); a case is "slow" above SLOW_P50_MS. */
const EXPLAIN_P95_MS = 50;
const SLOW_P50_MS = 100;
const DAY_MS = 86_400_000;

setLogTag("runs-list");
const log = (m: string) => process.stderr.write(`[runs-list] ${m}\n`);

// Workflows are skewed (wf-00 ≈ 32 % of runs … wf-09 ≈ 2.6 %), as a real project's are.
const WORKFLOWS = 10;
const workflowId = (i: number) => `wf-${String(i).padStart(2, "0")}`;
// Cumulative status mix: completed 70 %, failed 12 %, running 6 %, waiting 6 %, queued 6 %.
const STATUS_MIX: [string, number][] = [
  ["completed", 0.7],
  ["failed", 0.82],
  ["running", 0.88],
  ["waiting", 0.94],
  ["queued", 1],
];

// Purpose: seed `$2` executions of project `$1`, created over the 30 days before now. Params:
// project id, row count. Locks: row locks of the new rows only. Columns as prisma/schema.prisma.
const SEED = `
INSERT INTO executions (id, project_id, workflow_id, deployment_id, queue_name, dispatch_queue, status,
                        input, result, error, attempt, dispatch_seq, lease,
                        created_at, updated_at, started_at, completed_at)
SELECT gen_random_uuid(), $1::uuid, s.wf, 'bench', s.wf, 'spool-default', s.status,
       jsonb_build_object('order_id', s.g, 'customer', 'cus_' || left(md5(s.g::text), 12), 'items', s.g % 7),
       CASE WHEN s.status = 'completed' THEN jsonb_build_object('ok', true, 'total', s.g % 1000) END,
       CASE WHEN s.status = 'failed'
            THEN jsonb_build_object('name', 'Error', 'message', 'upstream timed out after 30 s') END,
       1, 1, CASE WHEN s.status = 'queued' THEN 0 ELSE 1 END,
       s.created_at, s.created_at + interval '2 seconds',
       CASE WHEN s.status <> 'queued' THEN s.created_at + interval '50 milliseconds' END,
       CASE WHEN s.status IN ('completed', 'failed') THEN s.created_at + interval '2 seconds' END
  FROM (SELECT g, 'wf-' || lpad(floor(${WORKFLOWS} * rw ^ 2)::int::text, 2, '0') AS wf,
               CASE ${STATUS_MIX.map(([s, c]) => `WHEN rs < ${c} THEN '${s}'`).join(" ")} END AS status,
               now() - rt * interval '30 days' AS created_at
          FROM (SELECT g, random() AS rw, random() AS rs, random() AS rt
                  FROM generate_series(1, $2::int) g) r) s`;

interface Case {
  name: string;
  query: Record<string, string>;
  /** GET of one execution instead of the list. */
  getId?: string;
}

interface Api {
  url: string;
  headers: Record<string, string>;
}

async function getJson<T>(api: Api, path: string): Promise<T> {
  const res = await fetch(`${api.url}/api/v1${path}`, { headers: api.headers });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

const listPath = (q: Record<string, string>) =>
  `/executions?${new URLSearchParams({ ...q, limit: String(PAGE) }).toString()}`;
const pathOf = (c: Case) => (c.getId ? `/executions/${c.getId}` : listPath(c.query));

type Page = { executions: { id: string; created_at: string }[]; next_cursor: string | null };

async function timeCase(api: Api, c: Case) {
  const path = pathOf(c);
  let rows = 0;
  let bytes = 0;
  const ms: number[] = [];
  for (let i = 0; i < WARMUP + REPS; i++) {
    const t0 = performance.now();
    const res = await fetch(`${api.url}/api/v1${path}`, { headers: api.headers });
    const text = await res.text();
    const elapsed = performance.now() - t0;
    if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
    if (i >= WARMUP) ms.push(elapsed);
    if (i === 0) {
      bytes = text.length;
      rows = c.getId ? 1 : (JSON.parse(text) as Page).executions.length;
    }
  }
  return { ...summarize(ms), rows, bytes };
}

/**
 * The statement the engine sends for a case (executions.ts list(): Prisma findMany over this where,
 * ORDER BY created_at DESC, id DESC, LIMIT limit + 1; get(): GET_EXECUTION), as text + values.
 */
function sqlOf(c: Case, projectId: string): { text: string; values: unknown[] } {
  const values: unknown[] = [projectId];
  const p = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  if (c.getId) {
    return {
      text: `SELECT * FROM executions WHERE id = ${p(c.getId)}::uuid AND project_id = $1::uuid`,
      values,
    };
  }
  const where = ["project_id = $1::uuid"];
  const q = c.query;
  if (q.workflow_id) where.push(`workflow_id = ${p(q.workflow_id)}`);
  if (q.status) where.push(`status = ${p(q.status)}`);
  if (q.created_after) where.push(`created_at >= ${p(q.created_after)}::timestamptz`);
  if (q.created_before) where.push(`created_at < ${p(q.created_before)}::timestamptz`);
  if (q.cursor) {
    const { k, id } = JSON.parse(Buffer.from(q.cursor, "base64url").toString()) as { k: string; id: string };
    const at = p(k);
    where.push(
      `(created_at < ${at}::timestamptz OR (created_at = ${at}::timestamptz AND id < ${p(id)}::uuid))`,
    );
  }
  return {
    text: `SELECT * FROM executions WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ${p(PAGE + 1)} OFFSET ${p(0)}`,
    values,
  };
}

async function explain(db: pg.Client, c: Case, projectId: string): Promise<string> {
  const { text, values } = sqlOf(c, projectId);
  const { rows } = await db.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
  return [`-- ${c.name}`, text, ...rows.map((r) => r["QUERY PLAN"])].join("\n");
}

/**
 * Headless Chromium against the api serving the built dashboard: signs in with the project key as
 * test/e2e/dashboard.test.ts does, then times navigation to /runs → first row of the runs table
 * visible, `reps` times (each from about:blank, so the app boots again; its assets are cached).
 */
async function browserFirstRow(apiUrl: string, apiKey: string, reps: number) {
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-gpu"],
  });
  try {
    const context = await browser.newContext({ baseURL: apiUrl, viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(45_000);
    await page.goto("/runs");
    await page.getByRole("heading", { level: 1, name: "Sign in to Spool" }).waitFor();
    await page.getByLabel("API key").fill(apiKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Runs" }).waitFor();
    const firstRow = page.locator("table tbody tr").first();
    const cold: number[] = [];
    const ms: number[] = [];
    for (let i = 0; i < reps + 1; i++) {
      await page.goto("about:blank");
      const t0 = performance.now();
      await page.goto("/runs");
      await firstRow.waitFor({ state: "visible" });
      (i === 0 ? cold : ms).push(performance.now() - t0);
    }
    return { firstMs: Math.round(cold[0]! * 100) / 100, ...summarize(ms) };
  } finally {
    await browser.close();
  }
}

async function main() {
  const started = performance.now();
  const loadBefore = loadavg();
  const { databaseUrl, redisUrl } = await benchServices({ durable: true });

  const adminKey = `sk_admin_bench_${randomBytes(24).toString("hex")}`;
  log("starting the api");
  // PORT=0: the OS picks the port as the API binds, and its log line says which (a port picked
  // before the process starts could be taken meanwhile).
  const apiApp = launch("api", "apps/api/src/main.ts", {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    SPOOL_LOG_LEVEL: "info",
    PORT: "0",
    HOST: "127.0.0.1",
    SPOOL_ADMIN_KEY: adminKey,
  });
  const { port } = await apiApp.waitForMsg("api listening");
  const apiUrl = `http://127.0.0.1:${Number(port)}`;
  log(`api on ${apiUrl}`);
  const { projectId, apiKey } = await createProject(apiUrl, adminKey, `runs-list-${Date.now()}`);
  const api: Api = {
    url: apiUrl,
    headers: { authorization: `Bearer ${apiKey}`, "x-project-id": projectId, accept: "application/json" },
  };

  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    log(`seeding ${ROWS} executions`);
    let t0 = performance.now();
    await db.query("SELECT setseed(0.42)"); // the same mix on every run
    await db.query(SEED, [projectId, ROWS]);
    const seedMs = performance.now() - t0;
    t0 = performance.now();
    await db.query("ANALYZE executions");
    const analyzeMs = performance.now() - t0;
    log(`seeded in ${Math.round(seedMs)} ms, ANALYZE in ${Math.round(analyzeMs)} ms`);
    const mix = await db.query<{ status: string; n: string }>(
      "SELECT status, count(*) AS n FROM executions WHERE project_id = $1 GROUP BY status ORDER BY 2 DESC",
      [projectId],
    );
    const wfCounts = await db.query<{ workflow_id: string; n: string }>(
      "SELECT workflow_id, count(*) AS n FROM executions WHERE project_id = $1 GROUP BY 1 ORDER BY 1",
      [projectId],
    );
    const tableMiB = await db.query<{ t: string; i: string }>(
      "SELECT pg_size_pretty(pg_table_size('executions')) AS t, pg_size_pretty(pg_indexes_size('executions')) AS i",
    );

    // The cases: the requests behind the runs page's first rows (its filters are RunsSearch).
    const now = Date.now();
    const midWorkflow = workflowId(4); // ~9 % of runs
    const rareWorkflow = workflowId(9); // ~2.6 % of runs
    const first = await getJson<Page>(api, listPath({}));
    const cases: Case[] = [
      { name: "first page, no filter", query: {} },
      { name: `workflow_id=${midWorkflow}`, query: { workflow_id: midWorkflow } },
      { name: `workflow_id=${rareWorkflow} (rarest)`, query: { workflow_id: rareWorkflow } },
      { name: "status=failed", query: { status: "failed" } },
      { name: "status=queued", query: { status: "queued" } },
      {
        name: "created in a 1-day window 10 days ago",
        query: {
          created_after: new Date(now - 11 * DAY_MS).toISOString(),
          created_before: new Date(now - 10 * DAY_MS).toISOString(),
        },
      },
      {
        name: "created_before 29.5 days ago (the oldest runs)",
        query: { created_before: new Date(now - 29.5 * DAY_MS).toISOString() },
      },
      {
        name: `workflow_id=${midWorkflow} & status=failed`,
        query: { workflow_id: midWorkflow, status: "failed" },
      },
      {
        name: `workflow_id=${rareWorkflow} & status=queued (rarest pair)`,
        query: { workflow_id: rareWorkflow, status: "queued" },
      },
    ];
    // Follow next_cursor as the "Older" button does.
    let cursor: string | null = first.next_cursor;
    for (let i = 1; i < DEEP_PAGES && cursor; i++) {
      cursor = (await getJson<Page>(api, listPath({ cursor }))).next_cursor;
    }
    if (cursor)
      cases.push({ name: `page ${DEEP_PAGES + 1} (next_cursor × ${DEEP_PAGES})`, query: { cursor } });
    let wfCursor: string | null = (await getJson<Page>(api, listPath({ workflow_id: midWorkflow })))
      .next_cursor;
    for (let i = 1; i < DEEP_PAGES && wfCursor; i++) {
      wfCursor = (await getJson<Page>(api, listPath({ workflow_id: midWorkflow, cursor: wfCursor })))
        .next_cursor;
    }
    if (wfCursor) {
      cases.push({
        name: `workflow_id=${midWorkflow}, page ${DEEP_PAGES + 1}`,
        query: { workflow_id: midWorkflow, cursor: wfCursor },
      });
    }
    // The last pages, as ~${ROWS / PAGE} clicks on "Older" would reach: the cursor of the row 1,000
    // from the end (the cursor is opaque to clients; the bench makes it as the engine does).
    const deep = await db.query<{ created_at: Date; id: string }>(
      "SELECT created_at, id FROM executions WHERE project_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1",
      [projectId, ROWS - 1_000],
    );
    const deepRow = deep.rows[0];
    if (deepRow) {
      const k = { k: deepRow.created_at.toISOString(), id: deepRow.id };
      cases.push({
        name: `page ~${Math.round((ROWS - 1_000) / PAGE)} (cursor ${ROWS - 1_000} rows in)`,
        query: { cursor: Buffer.from(JSON.stringify(k)).toString("base64url") },
      });
    }
    const runId = first.executions[7]?.id;
    if (runId) cases.push({ name: "GET one execution by id", query: {}, getId: runId });

    log(`timing ${cases.length} cases, ${REPS} requests each after ${WARMUP} warm-up requests`);
    const results = [];
    for (const c of cases) {
      const r = await timeCase(api, c);
      results.push({ c, r });
      log(`${c.name}: p50 ${r.p50} ms, p95 ${r.p95} ms, max ${r.max} ms`);
    }

    let browser: (ReturnType<typeof summarize> & { firstMs: number }) | null = null;
    if (args.browser) {
      log("browser: navigation to /runs → first row visible");
      ensureDashboardBuilt({ log });
      browser = await browserFirstRow(apiUrl, apiKey, 20);
    }

    const out: string[] = [];
    out.push(
      `# Runs list on ${ROWS.toLocaleString("en-US")} executions, ${new Date().toISOString().slice(0, 16)}Z`,
      "",
      `- Machine: ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), load before ${loadBefore.map((x) => x.toFixed(2)).join(" / ")}, after ${loadavg()
        .map((x) => x.toFixed(2))
        .join(" / ")}`,
      `- Seed: ${Math.round(seedMs)} ms (one INSERT … generate_series), ANALYZE ${Math.round(analyzeMs)} ms; executions table ${tableMiB.rows[0]?.t}, its indexes ${tableMiB.rows[0]?.i}`,
      `- Statuses: ${mix.rows.map((r) => `${r.status} ${r.n}`).join(", ")}`,
      `- Workflows: ${wfCounts.rows.map((r) => `${r.workflow_id} ${r.n}`).join(", ")}`,
      `- ${REPS} sequential requests per case after ${WARMUP} warm-up ones; client-side time to the whole body, in ms`,
      "",
      "| Case | Request | Rows | p50 | p95 | max |",
      "|---|---|---:|---:|---:|---:|",
    );
    for (const { c, r } of results) {
      const shown = pathOf(c).replace(/cursor=[^&]+/, "cursor=…");
      out.push(`| ${c.name} | \`GET ${shown}\` | ${r.rows} | ${r.p50} | ${r.p95} | ${r.max} |`);
    }
    if (browser) {
      out.push(
        "",
        `Headless Chromium, navigation to /runs → first table row visible: first load after sign-in ${browser.firstMs} ms; then ${browser.n} loads p50 ${browser.p50} ms, p95 ${browser.p95} ms, max ${browser.max} ms`,
      );
    }
    const slowest = [...results].sort((a, b) => (b.r.p50 ?? 0) - (a.r.p50 ?? 0))[0];
    const toExplain = args.explain
      ? results
      : results.some((x) => (x.r.p95 ?? 0) > EXPLAIN_P95_MS) && slowest
        ? [slowest]
        : [];
    if (toExplain.length) {
      out.push("", "## EXPLAIN (ANALYZE, BUFFERS) of the engine's SQL", "", "```");
      for (const x of toExplain) out.push(await explain(db, x.c, projectId), "");
      out.push("```");
    }
    const slow = results.filter((x) => (x.r.p50 ?? 0) > SLOW_P50_MS);
    out.push(
      "",
      slow.length
        ? `**Slow (p50 > ${SLOW_P50_MS} ms):** ${slow.map((x) => x.c.name).join(", ")}`
        : `No case has p50 > ${SLOW_P50_MS} ms. Took ${Math.round((performance.now() - started) / 1000)} s.`,
    );
    process.stdout.write(`${out.join("\n")}\n`);
    if (!apiApp.alive) throw new Error(`the api died\n${apiApp.tail}`);
  } finally {
    await db.end();
  }
}

stopAllOnSignals();

main().then(
  () => stopAllAndExit(0),
  (err: unknown) => {
    process.stderr.write(`[runs-list] failed: ${err instanceof Error ? err.stack : err}\n`);
    return stopAllAndExit(1);
  },
);
