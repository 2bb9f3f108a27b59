// The setup the agent system tests share: the local test LLM, the system over the agent fixtures,
// and one worker whose model is that LLM. Fields are set in beforeAll; the script is reset per test.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { startTestLlm, type TestLlm } from "../llm/server.js";
import { type System, startSystem } from "./harness.js";

export const AGENT_FIXTURES = fileURLToPath(new URL("../fixtures/agents.ts", import.meta.url));

export function useAgentSystem(): { sys: System; llm: TestLlm } {
  const env = {} as { sys: System; llm: TestLlm };
  beforeAll(async () => {
    env.llm = await startTestLlm();
    env.sys = await startSystem({
      workflowsModule: AGENT_FIXTURES,
      workerEnv: { SPOOL_LLM_BASE_URL: env.llm.url },
    });
    await env.sys.startWorker();
  });
  afterAll(async () => {
    await env.sys?.stop();
    await env.llm?.close();
  });
  beforeEach(() => env.llm.reset());
  return env;
}
