// The dashboard in a real browser (headless Chromium) against a real Spool: the API serving the built
// dashboard on a real port, Postgres, Redis and worker processes. Every wait is for something the
// page shows (Playwright's locators wait for it), never a fixed sleep.
//
// SPOOL_DASHBOARD_SCREENSHOTS=<dir> also saves a PNG of each page there (docs/dashboard in the repo).
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureDashboardBuilt } from "../../scripts/build-dashboard.mjs";
import { startTestLlm, type TestLlm } from "../llm/server.js";
import { AGENT_FIXTURES } from "../system/agent-system.js";
import { type System, startSystem } from "../system/harness.js";

const SHOTS = process.env.SPOOL_DASHBOARD_SCREENSHOTS
  ? resolve(process.env.SPOOL_DASHBOARD_SCREENSHOTS)
  : null;
const WIDE = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
/** The slow CI machine (2 cores) gets room; nothing here asserts how long anything took. */
const WAIT_MS = 45_000;

let browser: Browser;

beforeAll(async () => {
  ensureDashboardBuilt();
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-gpu"],
  });
});

afterAll(async () => {
  await browser?.close();
});

/** A browser tab on the system's API, noting script errors and anything the CSP refused. */
async function openTab(sys: System): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ baseURL: sys.apiUrl, viewport: WIDE, reducedMotion: "reduce" });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  return { context, page, problems };
}

async function shot(page: Page, name: string) {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

/** Scrolls a section's heading to the top, so a screenshot shows that part of a long page. */
async function scrollTo(page: Page, heading: string) {
  await page
    .getByRole("heading", { name: heading, exact: true })
    .evaluate((el) => el.scrollIntoView({ block: "start" }));
}

const heading = (page: Page, name: string | RegExp) => page.getByRole("heading", { level: 1, name });

/** Waits until the run page's headline status reads `status`. */
const runStatus = (page: Page, status: string) =>
  page.locator(".page-heading .badge", { hasText: new RegExp(`^${status}$`) }).waitFor();

async function signIn(page: Page, key: string) {
  await page.goto("/runs");
  await heading(page, "Sign in to Spool").waitFor();
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await heading(page, "Runs").waitFor();
}

/** How far the page is wider than the window (0 when nothing scrolls sideways). */
const sidewaysOverflow = (page: Page) =>
  page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");

// Each test waits for several things in turn: room for a slow machine, beyond vitest's 60 s default.
const SLOW = { timeout: 150_000 };

describe("the dashboard over a system of workflows", SLOW, () => {
  let sys: System;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];
  const runIds: Record<string, string> = {};

  beforeAll(async () => {
    sys = await startSystem();
    await sys.startWorker();
    ({ context, page, problems } = await openTab(sys));
  });

  afterAll(async () => {
    await context?.close();
    await sys?.stop();
  });

  it("asks to sign in, shows the API's answer to a wrong key, and signs in with the project key", async () => {
    await page.goto("/runs");
    await heading(page, "Sign in to Spool").waitFor();
    expect(new URL(page.url()).pathname).toBe("/sign-in");
    await shot(page, "sign-in");

    await page.getByLabel("API key").fill("sk_not_a_real_key");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "invalid or revoked API key" }).waitFor();
    // What was typed is still there to correct.
    expect(await page.getByLabel("API key").inputValue()).toBe("sk_not_a_real_key");

    await page.getByLabel("API key").fill(sys.apiKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await heading(page, "Runs").waitFor();
    expect(new URL(page.url()).pathname).toBe("/runs");
  });

  it("runs a workflow from the UI, refusing bad input with a message, and watches it complete", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Workflows" }).click();
    await heading(page, "Workflows, agents and tools").waitFor();
    await page.getByRole("cell", { name: "three-steps", exact: true }).waitFor();
    // The worker serving it is listed with it.
    await page
      .getByRole("row", { name: /three-steps/ })
      .getByText(/1 online worker/)
      .waitFor();
    await shot(page, "workflows");

    await page.getByRole("button", { name: "Run three-steps…" }).click();
    const input = page.getByLabel("Input (JSON object)");
    expect(await page.getByLabel("Workflow", { exact: true }).inputValue()).toBe("three-steps");

    // Not JSON: refused before anything is sent, and the text stays.
    await input.fill('{"n": 4');
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: "The input is not valid JSON" }).waitFor();
    expect(await input.inputValue()).toBe('{"n": 4');

    // JSON the API refuses: its own message is shown.
    await input.fill('{"n": "\\u0000"}');
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: "must not contain NUL" }).waitFor();
    expect(await input.inputValue()).toBe('{"n": "\\u0000"}');

    await input.fill('{"n": 4}');
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await heading(page, "Run of three-steps").waitFor();
    runIds.threeSteps = new URL(page.url()).pathname.split("/").pop()!;
    await runStatus(page, "completed");
    await page.getByText('"c": "n=4 -> 10"').waitFor();
  });

  it("shows the run's steps as a timeline and its trace as a waterfall", async () => {
    for (const step of ["add-one", "double", "describe"]) {
      await page.locator(".timeline .step", { hasText: step }).getByText("completed").waitFor();
    }
    // The run's own span and one per step, each a bar placed by its start and end.
    const rows = page.locator(".waterfall .span-row");
    await rows.filter({ hasText: "three-steps" }).waitFor();
    await expect.poll(() => rows.count(), { timeout: WAIT_MS }).toBe(4);
    const describeSpan = rows.filter({ hasText: "describe" });
    await describeSpan.click();
    expect(await describeSpan.getAttribute("aria-expanded")).toBe("true");
    await page.locator(".span-details").getByText('"n=4 -> 10"').waitFor();
    await scrollTo(page, "Steps");
    await shot(page, "run");
  });

  it("runs it again with the same input", async () => {
    await page.getByRole("button", { name: "Run again with the same input" }).click();
    await page.waitForURL(
      (url) => url.pathname.startsWith("/runs/") && !url.pathname.endsWith(runIds.threeSteps!),
    );
    await runStatus(page, "completed");
    await page.getByText('"n": 4').first().waitFor();
  });

  it("lists runs live, a page at a time, filters them and finds one by id", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Runs" }).click();
    await heading(page, "Runs").waitFor();
    // Started elsewhere, it shows up without a reload (the list refreshes itself).
    const { execution_id } = await sys.client.run("quick", {});
    await page.getByRole("link", { name: new RegExp(execution_id) }).waitFor();

    // More than a page of runs: keyset paging forward and back.
    await sys.client.request("POST", "/workflows/batch_run", {
      workflows: Array.from({ length: 55 }, () => ({ workflow_id: "quick", input: {} })),
    });
    const rows = page.locator("table tbody tr");
    await expect.poll(() => rows.count(), { timeout: WAIT_MS }).toBe(50);
    const firstOnPage1 = await rows.first().getByRole("link").textContent();
    await page.getByRole("button", { name: "Older →" }).click();
    await page.getByRole("heading", { name: "Runs, page 2" }).waitFor();
    await expect
      .poll(
        async () =>
          (await rows.count()) > 0 && (await rows.first().getByRole("link").textContent()) !== firstOnPage1,
      )
      .toBe(true);
    await page.getByRole("button", { name: "← Newer" }).click();
    await page.getByRole("heading", { name: "Latest runs" }).waitFor();

    // Filters go into the URL and narrow the list.
    await page.getByLabel("Workflow", { exact: true }).selectOption("three-steps");
    await page.waitForURL(/workflow_id=three-steps/);
    await expect
      .poll(async () => [...new Set(await page.locator("tbody td[data-label=Workflow]").allTextContents())])
      .toEqual(["three-steps"]);
    await page.getByLabel("Status", { exact: true }).selectOption("completed");
    await page.waitForURL(/status=completed/);
    await expect
      .poll(async () => [
        ...new Set(await page.locator("tbody td[data-label=Status] .badge").allTextContents()),
      ])
      .toEqual(["completed"]);
    await page.getByRole("button", { name: "Clear filters" }).click();
    await page.waitForURL((url) => url.search === "");

    // Find by exact id: a malformed one is refused with a message, a real one opens.
    await page.getByLabel("Run id").fill("not-an-id");
    await page.getByRole("button", { name: "Open run" }).click();
    await page.getByRole("alert").filter({ hasText: "A run id is a UUID" }).waitFor();
    await page.getByLabel("Run id").fill(runIds.threeSteps!);
    await page.getByRole("button", { name: "Open run" }).click();
    await heading(page, "Run of three-steps").waitFor();
    expect(new URL(page.url()).pathname).toBe(`/runs/${runIds.threeSteps}`);
  });

  it("resumes a suspended run with the form built from what it shows", async () => {
    const { execution_id } = await sys.client.run("approval", { amount: 3 });
    runIds.approval = execution_id;
    await page.goto(`/runs/${execution_id}`);
    await runStatus(page, "suspended");
    await page.getByRole("heading", { name: "Resume the run" }).waitFor();
    await page.getByText('"cents": 300').first().waitFor();
    await page
      .locator(".timeline .step", { hasText: "approve" })
      .getByText(/Waiting for a person/)
      .waitFor();
    await shot(page, "suspended-run");

    const data = page.getByLabel("Resume data (JSON object)");
    await data.fill("[1, 2]");
    await page.getByRole("button", { name: "Resume", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: "must be a JSON object" }).waitFor();
    expect(await data.inputValue()).toBe("[1, 2]");

    await data.fill('{"approved": true, "by": "ann"}');
    await page.getByRole("button", { name: "Resume", exact: true }).click();
    await runStatus(page, "completed");
    await page.getByText('"by": "ann"').first().waitFor();
    expect((await sys.client.executions.get(execution_id)).result).toEqual({
      cents: 300,
      approved: true,
      by: "ann",
    });
  });

  it("cancels a sleeping run", async () => {
    const { execution_id } = await sys.client.run("sleeper", { ms: 3_600_000 });
    await page.goto(`/runs/${execution_id}`);
    await runStatus(page, "waiting");
    await page
      .locator(".timeline .step", { hasText: "nap" })
      .getByText(/Sleeping until/)
      .waitFor();
    await page.getByRole("button", { name: "Cancel run" }).click();
    await page.getByRole("button", { name: "Yes, cancel it" }).click();
    await runStatus(page, "cancelled");
    expect((await sys.client.executions.get(execution_id)).status).toBe("cancelled");
    // A finished run offers no cancel.
    expect(await page.getByRole("button", { name: "Cancel run" }).count()).toBe(0);
  });

  it("shows a step's retries and a run's failure, and every status in words", async () => {
    const { execution_id } = await sys.client.run("flaky", {});
    await page.goto(`/runs/${execution_id}`);
    await runStatus(page, "failed");
    const step = page.locator(".timeline .step", { hasText: "always-fails" });
    await step.getByText("3 attempts (2 retries)").waitFor();
    await step.getByText("upstream said no").waitFor();
    await page.getByRole("heading", { name: "Error", exact: true }).waitFor();

    // A run of each kind, for the list (and its screenshot) to show them side by side.
    await sys.client.run("approval", { amount: 1 });
    await sys.client.run("sleeper", { ms: 3_600_000 });
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Runs" }).click();
    const statuses = page.locator("tbody td[data-label=Status] .badge");
    for (const status of ["suspended", "waiting", "failed", "cancelled", "completed"]) {
      await statuses
        .filter({ hasText: new RegExp(`^${status}$`) })
        .first()
        .waitFor();
    }
    await shot(page, "runs");
  });

  it("links a run to its child runs and back", async () => {
    const { execution_id } = await sys.client.run("parent", {});
    await page.goto(`/runs/${execution_id}`);
    await runStatus(page, "waiting");
    const wait = page.locator(".timeline .step", { hasText: "call-child" });
    await wait.getByText(/Waiting for child run/).waitFor();
    const children = page.getByRole("region", { name: "Child runs" });
    await children.getByRole("link", { name: /child/ }).click();
    await heading(page, "Run of child").waitFor();
    await runStatus(page, "suspended");
    await page.getByText("Parent run").waitFor();
    await page.getByRole("link", { name: execution_id }).click();
    await heading(page, "Run of parent").waitFor();
    // Cancelling the parent cancels the child it waits for.
    await page.getByRole("button", { name: "Cancel run" }).click();
    await page.getByRole("button", { name: "Yes, cancel it" }).click();
    await runStatus(page, "cancelled");
    await children.getByText("cancelled", { exact: true }).waitFor();
  });

  it("events: publishes, tails a topic live and browses its history", async () => {
    const topic = "orders-e2e";
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Events" }).click();
    await heading(page, "Events").waitFor();
    await page.getByLabel("Topic to show").fill(topic);
    await page.getByRole("button", { name: "Show topic" }).click();
    await page.getByText("No events on this topic yet.").waitFor();
    await page.getByRole("button", { name: "Start live tail" }).click();
    await page.getByText("Live: new events appear here as they are published.").waitFor();

    // Bad data is refused with a message; the text stays.
    const data = page.getByLabel("Data (JSON object)");
    await data.fill("orderId: o-1");
    await page.getByRole("button", { name: "Publish", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: "The data is not valid JSON" }).waitFor();
    expect(await data.inputValue()).toBe("orderId: o-1");

    await page.getByLabel("Event type (optional)").fill("order.created");
    await data.fill('{"orderId": "o-1"}');
    await page.getByRole("button", { name: "Publish", exact: true }).click();
    await page.getByText(/Published as sequence \d+\./).waitFor();
    // Published by someone else, it reaches the live tail too.
    await sys.client.events.publish(topic, { orderId: "o-2" });
    const tail = page.getByRole("table", { name: `Live events of ${topic}, newest first` });
    await tail.getByText('"orderId": "o-2"').waitFor();
    await tail.getByText('"orderId": "o-1"').waitFor();
    const history = page.getByRole("table", { name: `Events of ${topic}, oldest first` });
    await page.getByRole("button", { name: "Refresh" }).click();
    await history.getByText('"orderId": "o-2"').waitFor();
    await history.getByText("order.created").waitFor();
    await shot(page, "events");
  });

  it("triggers and schedules: next fire, pause and resume, delete", async () => {
    // Beside what the fixtures declare (the `declared` workflow's trigger and yearly schedule).
    await sys.client.request("POST", "/event-triggers/register", {
      workflow_id: "batch-consumer",
      deployment_id: "default",
      event_topic: "e2e-topic",
      batch_size: 5,
      batch_timeout_seconds: 30,
    });
    await sys.client.request("POST", "/schedules", { workflow_id: "quick", cron: "*/5 * * * *", key: "e2e" });

    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Triggers & schedules" })
      .click();
    await heading(page, "Triggers and schedules").waitFor();
    const yearly = page.getByRole("row", { name: /declared.*yearly/ });
    await yearly.getByText("0 0 1 1 *").waitFor();
    const nextYear = new Date().getUTCFullYear() + 1;
    await yearly.locator("td[data-label='Next run'] time").first().waitFor();
    expect(await yearly.locator("td[data-label='Next run'] time").first().getAttribute("datetime")).toMatch(
      new RegExp(`^${nextYear}-01-0[12]T|^${nextYear - 1}-12-31T`),
    );
    await page.getByRole("row", { name: /declared-topic/ }).waitFor();
    await shot(page, "triggers-and-schedules");

    await page.getByRole("button", { name: "Pause the schedule of declared (yearly)" }).click();
    await yearly.locator(".badge", { hasText: "paused" }).waitFor();
    await page.getByRole("button", { name: "Resume the schedule of declared (yearly)" }).click();
    await yearly.locator(".badge", { hasText: "active" }).waitFor();

    const every5 = page.getByRole("row", { name: /quick.*e2e/ });
    await every5.getByRole("button", { name: "Delete" }).click();
    await every5.getByRole("button", { name: "Yes, delete" }).click();
    await every5.waitFor({ state: "detached" });
    const trigger = page.getByRole("row", { name: /e2e-topic/ });
    await page.getByRole("button", { name: "Pause the trigger of batch-consumer on e2e-topic" }).click();
    await trigger.locator(".badge", { hasText: "paused" }).waitFor();
    const paused = (
      await sys.client.request<{ triggers: { event_topic: string; status: string }[] }>(
        "GET",
        "/event-triggers",
      )
    ).triggers.find((t) => t.event_topic === "e2e-topic");
    expect(paused?.status).toBe("paused");
    await page.getByRole("button", { name: "Resume the trigger of batch-consumer on e2e-topic" }).click();
    await trigger.locator(".badge", { hasText: "active" }).waitFor();
    await trigger.getByRole("button", { name: "Delete" }).click();
    await trigger.getByRole("button", { name: "Yes, delete" }).click();
    await trigger.waitFor({ state: "detached" });
    const left = (await sys.client.request<{ schedules: { key: string }[] }>("GET", "/schedules")).schedules;
    expect(left.map((s) => s.key)).toEqual(["yearly"]);
  });

  it("workers and queues: who is online, and each queue's depth and limits", async () => {
    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Workers & queues" })
      .click();
    await heading(page, "Workers and queues").waitFor();
    // Focus moves to the new page's heading, as after a full page load.
    await expect
      .poll(() => page.evaluate("document.activeElement && document.activeElement.textContent"))
      .toBe("Workers and queues");
    await page.locator("td[data-label=Status] .badge", { hasText: "online" }).first().waitFor();
    await page
      .getByRole("row", { name: /^limited/ })
      .getByText("2 per key")
      .waitFor();
    await page.getByRole("row", { name: /^default/ }).waitFor();
    await shot(page, "workers-and-queues");
  });

  it("fits a 390 px wide screen: the menu folds away and no page scrolls sideways", async () => {
    await page.setViewportSize(PHONE);
    try {
      const pages: [string, () => Promise<void>][] = [
        ["/runs", () => page.locator("table tbody tr").first().waitFor()],
        [`/runs/${runIds.threeSteps}`, () => page.locator(".waterfall .span-row").first().waitFor()],
        [`/runs/${runIds.approval}`, () => page.locator(".timeline .step").first().waitFor()],
        ["/workflows", () => page.getByRole("link", { name: "three-steps", exact: true }).waitFor()],
        ["/events?topic=orders-e2e", () => page.getByText('"orderId": "o-2"').first().waitFor()],
        ["/triggers", () => page.getByText("0 0 1 1 *").waitFor()],
        ["/workers", () => page.locator("td[data-label=Status] .badge").first().waitFor()],
      ];
      for (const [path, loaded] of pages) {
        await page.goto(path);
        await loaded();
        expect({ path, overflow: await sidewaysOverflow(page) }).toEqual({ path, overflow: 0 });
        if (path === "/runs") await shot(page, "runs-390px");
      }
      // The navigation hides behind its button until asked for.
      const nav = page.getByRole("navigation", { name: "Main" });
      expect(await nav.getByRole("link", { name: "Events" }).isVisible()).toBe(false);
      await page.getByRole("button", { name: "Menu" }).click();
      expect(await page.getByRole("button", { name: "Menu" }).getAttribute("aria-expanded")).toBe("true");
      await nav.getByRole("link", { name: "Events" }).click();
      await heading(page, "Events").waitFor();
    } finally {
      await page.setViewportSize(WIDE);
    }
  });

  it("can be used from the keyboard: a skip link first, then the navigation in reading order", async () => {
    await page.goto("/runs");
    await heading(page, "Runs").waitFor();
    const focused = () => page.evaluate("document.activeElement && document.activeElement.textContent");
    await page.keyboard.press("Tab");
    expect(await focused()).toBe("Skip to content");
    const order: unknown[] = [];
    for (let i = 0; i < 7; i++) {
      await page.keyboard.press("Tab");
      order.push(await focused());
    }
    expect(order).toEqual([
      "Spool",
      "Runs",
      "Workflows",
      "Events",
      "Triggers & schedules",
      "Workers & queues",
      "Sign out",
    ]);
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Enter");
    await heading(page, "Triggers and schedules").waitFor();
  });

  it("signs out; a page then asks to sign in again", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await heading(page, "Sign in to Spool").waitFor();
    await page.goto("/workflows");
    await heading(page, "Sign in to Spool").waitFor();
    expect(new URL(page.url()).pathname).toBe("/sign-in");
    // The cookie is gone, not only the page's state.
    expect(await page.evaluate(() => fetch("/api/v1/session").then((r) => r.status))).toBe(401);
    expect(problems).toEqual([]);
  });
});

describe("the dashboard with the admin key", SLOW, () => {
  let sys: System;

  beforeAll(async () => {
    // A database of its own: the project list then holds this system's projects only.
    sys = await startSystem({ ownDatabase: true });
    await sys.startWorker();
  });

  afterAll(async () => {
    await sys?.stop();
  });

  it("picks a project, then reads and acts in it (a write carries the picked project)", async () => {
    const other = await sys.client.run("quick", {});
    await sys.client.executions.waitForResult(other.execution_id);
    const { context, page, problems } = await openTab(sys);
    try {
      await page.goto("/runs");
      await heading(page, "Sign in to Spool").waitFor();
      await page.getByLabel("API key").fill(sys.adminKey);
      await page.getByRole("button", { name: "Sign in" }).click();
      await heading(page, "Choose a project").waitFor();
      await shot(page, "projects");
      await page
        .getByRole("listitem")
        .filter({ hasText: sys.projectId })
        .getByRole("button", { name: /^Open / })
        .click();
      await heading(page, "Runs").waitFor();
      await page.getByRole("link", { name: new RegExp(other.execution_id.slice(0, 8)) }).click();
      await runStatus(page, "completed");
      await page.getByRole("button", { name: "Run again with the same input" }).click();
      await expect.poll(() => new URL(page.url()).pathname).not.toBe(`/runs/${other.execution_id}`);
      await runStatus(page, "completed");
      const again = new URL(page.url()).pathname.split("/").pop() ?? "";
      expect((await sys.client.executions.get(again)).workflow_id).toBe("quick");
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe("an agent run in the dashboard", SLOW, () => {
  let llm: TestLlm;
  let sys: System;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    llm = await startTestLlm();
    sys = await startSystem({ workflowsModule: AGENT_FIXTURES, workerEnv: { SPOOL_LLM_BASE_URL: llm.url } });
    await sys.startWorker();
    ({ context, page, problems } = await openTab(sys));
    await signIn(page, sys.apiKey);
  });

  afterAll(async () => {
    await context?.close();
    await sys?.stop();
    await llm?.close();
  });

  it("streams the agent's text live, asks to approve its tool call, and sends the rejection's feedback to the model", async () => {
    llm.script(
      {
        text: "Let me check the weather in Paris first.",
        toolCalls: [{ name: "get-weather", arguments: { city: "Paris" } }],
        usage: { prompt_tokens: 40, completion_tokens: 12 },
      },
      {
        text: "I drafted the email and will send it now.",
        toolCalls: [{ name: "send-email", arguments: { to: "ann@example.com", body: "Sunny, 21 C" } }],
      },
      { text: "Understood: I did not send the email.", chunkDelayMs: 20 },
    );
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Workflows" }).click();
    await page.getByRole("button", { name: "Run mailer-agent…" }).click();
    await page.getByLabel("Input (JSON object)").fill('{"message": "Email Ann the weather in Paris"}');
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await heading(page, "Run of mailer-agent").waitFor();

    // The model's words arrive on the stream while the run is still going: it now waits for a person.
    const stream = page.getByRole("list", { name: "Model output" });
    await stream.getByText("Let me check the weather in Paris first.").waitFor();
    await stream.getByText("I drafted the email and will send it now.").waitFor();
    await page.getByRole("heading", { name: "Approve the tool call" }).waitFor();
    await runStatus(page, "suspended");
    await page.locator(".attention").getByText("send-email", { exact: true }).waitFor();
    await page.locator(".attention").getByText('"to": "ann@example.com"').waitFor();
    expect(await stream.getByText("Understood").count()).toBe(0);
    await scrollTo(page, "Approve the tool call");
    await shot(page, "agent-approval");

    await page.getByLabel("Feedback for the model (when you reject)").fill("Do not email Ann today.");
    await page.getByRole("button", { name: "Reject with feedback" }).click();
    // The same page, no reload: the answer to the rejection streams in.
    await stream.getByText("Understood: I did not send the email.").waitFor();
    await runStatus(page, "completed");
    await page.getByText(/Finished \(final answer\)/).waitFor();
    expect(llm.requests).toHaveLength(3);
    expect(JSON.stringify(llm.requests[2]!.body.messages)).toContain("Do not email Ann today.");

    // The trace: LLM calls with model and tokens, the tool call, and what was sent to the model.
    const rows = page.locator(".waterfall .span-row");
    const firstCall = rows.filter({ hasText: "llm-1" });
    await firstCall.getByText(/test-model · 52 tokens/).waitFor();
    await rows.filter({ hasText: "tool-1-1-get-weather" }).waitFor();
    await rows.filter({ hasText: "llm-3" }).waitFor();
    await firstCall.click();
    const details = page.locator(".span-details");
    await details.getByText("40 in, 12 out, 52 total").waitFor();
    await details.getByText("Email Ann the weather in Paris").waitFor();
    await details.getByText("You write and send emails.").waitFor();
    await page.evaluate("window.scrollTo(0, 0)");
    await shot(page, "agent-run");
    await scrollTo(page, "Trace");
    await shot(page, "agent-trace");
    expect(problems).toEqual([]);
  });
});
