import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestLlm, type TestLlm } from "../llm/server.js";
import { eventually, type System, startSystem } from "./harness.js";

const EXAMPLES = fileURLToPath(new URL("../../examples/index.ts", import.meta.url));

describe("the shipped examples (as `npm run dev` serves them; the agent against the test LLM)", () => {
  let sys: System;
  let llm: TestLlm;

  beforeAll(async () => {
    llm = await startTestLlm();
    sys = await startSystem({ workflowsModule: EXAMPLES, workerEnv: { SPOOL_LLM_BASE_URL: llm.url } });
    await sys.startWorker();
  });
  afterAll(async () => {
    await sys?.stop();
    await llm?.close();
  });

  it("registers its agent and tools, searches, waits for approval to publish, and answers", async () => {
    const agents = await sys.client.request<{ agents: Record<string, unknown>[] }>("GET", "/agents");
    expect(agents.agents).toContainEqual(
      expect.objectContaining({
        id: "research-agent",
        provider: "openai-compatible",
        tools: ["search-notes", "publish-report"],
        config: expect.objectContaining({ max_steps: 8, base_url: llm.url }),
      }),
    );
    const tools = await sys.client.request<{ tools: Record<string, unknown>[] }>("GET", "/tools");
    expect(tools.tools.find((t) => t.id === "search-notes")).toMatchObject({
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    });
    expect(tools.tools.find((t) => t.id === "publish-report")).toMatchObject({
      metadata: { approval: "always" },
    });

    llm.script(
      { toolCalls: [{ name: "search-notes", arguments: { query: "durable" } }] },
      {
        toolCalls: [
          { name: "publish-report", arguments: { title: "Durability", body: "Steps are stored." } },
        ],
      },
      { text: "Published the report (n1)." },
    );
    const { execution_id } = await sys.client.run("research-agent", { message: "Report on durability" });
    await eventually(async () =>
      (await sys.client.executions.get(execution_id)).status === "suspended" ? true : undefined,
    );
    await sys.client.executions.resume(execution_id, { approved: true });
    const done = await sys.client.executions.waitForResult(execution_id);
    expect(done.result).toMatchObject({ text: "Published the report (n1).", stopped: "final_answer" });
    const [found] = llm.requests[1]!.body.messages.filter((m) => m.role === "tool");
    expect(JSON.parse(String(found!.content))).toEqual([expect.objectContaining({ id: "n1" })]);
    expect(JSON.parse(String(llm.requests[2]!.body.messages.at(-1)!.content))).toMatchObject({
      published: true,
    });
  });

  it("process-order: prices, reserves stock in a child run, charges, sleeps 2 s, confirms", async () => {
    const { execution_id } = await sys.client.run("process-order", {
      orderId: "o-1",
      items: [
        { sku: "book", quantity: 2, price: 12 },
        { sku: "pen", quantity: 1, price: 3 },
      ],
    });
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({
      status: "completed",
      result: { orderId: "o-1", total: 27, paymentId: "pay_o-1_27", reservationId: "res_o-1" },
    });
    const { steps } = await sys.client.request<{ steps: { step_key: string }[] }>(
      "GET",
      `/executions/${execution_id}/steps`,
    );
    expect(steps.map((s) => s.step_key)).toEqual([
      "price",
      "reserve-stock",
      "charge",
      "cool-off",
      "confirmed-at",
    ]);
    const { executions } = await sys.client.request<{
      executions: { workflow_id: string; status: string }[];
    }>("GET", `/executions?parent_execution_id=${execution_id}`);
    expect(executions).toMatchObject([{ workflow_id: "reserve-stock", status: "completed" }]);
  });

  it("expense-approval: suspends with its question, and pays once resumed", async () => {
    const { execution_id } = await sys.client.run("expense-approval", { employee: "ann", amount: 42 });
    const suspended = await eventually(async () => {
      const e = await sys.client.executions.get(execution_id);
      return e.status === "suspended" ? e : undefined;
    });
    expect(suspended).toMatchObject({
      suspended_step_key: "manager-approval",
      suspended_data: { question: "Approve 42 for ann?" },
    });
    await sys.client.executions.resume(execution_id, { approved: true, note: "ok" });
    const done = await sys.client.executions.waitForResult(execution_id);
    expect(done.result).toEqual({ outcome: "paid", note: "ok" });
  });

  it("await-payment: resumes on its invoice's payment event, and reports unpaid when none comes in time", async () => {
    const paid = (await sys.client.run("await-payment", { invoiceId: "inv_1" })).execution_id;
    const unpaid = (await sys.client.run("await-payment", { invoiceId: "inv_2", timeout: "1s" }))
      .execution_id;
    await eventually(async () =>
      (await sys.client.executions.get(paid)).status === "waiting" ? true : undefined,
    );
    await sys.client.events.publish("payments", { invoiceId: "inv_1", paid: true });
    expect((await sys.client.executions.waitForResult(paid)).result).toEqual({
      invoiceId: "inv_1",
      paid: true,
      event: { invoiceId: "inv_1", paid: true },
    });
    expect((await sys.client.executions.waitForResult(unpaid, { timeoutMs: 30_000 })).result).toEqual({
      invoiceId: "inv_2",
      paid: false,
    });
  });
});
