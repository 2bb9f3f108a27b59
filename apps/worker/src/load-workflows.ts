import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { collectDefinitions, type Definitions } from "@spool/sdk/internal";

/**
 * Imports the user's module and collects every exported workflow, agent, tool (and queue)
 * definition. `.ts` modules load through tsx, which the worker runs under.
 */
export async function loadWorkflows(modulePath: string): Promise<Definitions> {
  const url = pathToFileURL(isAbsolute(modulePath) ? modulePath : resolve(process.cwd(), modulePath)).href;
  const mod = (await import(url)) as Record<string, unknown>;
  return collectDefinitions(Object.values(mod), modulePath);
}
