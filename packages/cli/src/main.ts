import { parseArgs } from "node:util";
import { SpoolApiError } from "@spool/sdk/client";
import { publishEvent, tailEvents } from "./commands/events.js";
import { listQueues, listSchedules, listTriggers, listWorkers } from "./commands/lists.js";
import { runLogs } from "./commands/logs.js";
import { runWorkflow } from "./commands/run.js";
import { cancelRun, getRun, listRuns, resumeRun, runSteps } from "./commands/runs.js";
import { connectionOf, secondsArg, UsageError } from "./config.js";
import { contextOf } from "./context.js";
import { stdout } from "./output.js";

const USAGE = `spool: run workflows, follow runs and read Spool from a terminal

  spool run <workflow> [--input <json|@file>] [--wait] [--timeout <s>] [--queue <q>] [--key <k>]
  spool runs list [--workflow <id>] [--status <s>] [--limit <n>] [--cursor <c>]
  spool runs get|steps|cancel <execution>
  spool runs resume <execution> [--data <json|@file>] [--wait] [--timeout <s>]
  spool logs <execution> [--follow]
  spool events publish <topic> --data <json|@file> [--type <t>]
  spool events tail <topic> [--from <sequence id>]
  spool workers | queues | schedules | triggers

Every command takes --json (machine-readable output) and --api-url, --api-key, --project (else
SPOOL_API_URL, SPOOL_API_KEY, SPOOL_PROJECT_ID, else npm run dev's .data/dev.json).
Exit status: 0 done, 1 the API refused or the run did not complete, 2 a usage error.
`;

const OPTIONS = {
  "api-url": { type: "string" },
  "api-key": { type: "string" },
  project: { type: "string" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
  input: { type: "string" },
  data: { type: "string" },
  wait: { type: "boolean", default: false },
  timeout: { type: "string", default: "120" },
  queue: { type: "string" },
  key: { type: "string" },
  "idempotency-key": { type: "string" },
  workflow: { type: "string" },
  status: { type: "string" },
  limit: { type: "string" },
  cursor: { type: "string" },
  follow: { type: "boolean", short: "f", default: false },
  type: { type: "string" },
  from: { type: "string" },
} as const;

/** An unexpected error for a person: its message, with its cause ("fetch failed" says little alone). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return cause && !err.message.includes(cause) ? `${err.message} (${cause})` : err.message;
}

/** Runs `spool <argv>`; returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const {
    values: o,
    positionals: [command, ...rest],
  } = parsed;
  if (o.help || !command) {
    process.stdout.write(USAGE);
    return command || o.help ? 0 : 2;
  }
  try {
    const timeout = secondsArg(o.timeout, "--timeout");
    const ctx = contextOf(connectionOf(o), stdout(o.json));
    const arg = (i: number, what: string) => {
      const value = rest[i];
      if (!value) throw new UsageError(`missing ${what}`);
      return value;
    };
    switch (command) {
      case "run":
        return await runWorkflow(ctx, arg(0, "<workflow>"), {
          input: o.input,
          wait: o.wait,
          timeout,
          queue: o.queue,
          key: o.key,
          idempotencyKey: o["idempotency-key"],
        });
      case "runs": {
        const sub = arg(0, "a subcommand: list, get, steps, cancel or resume");
        if (sub === "list") await listRuns(ctx, o);
        else if (sub === "get") await getRun(ctx, arg(1, "<execution>"));
        else if (sub === "steps") await runSteps(ctx, arg(1, "<execution>"));
        else if (sub === "cancel") await cancelRun(ctx, arg(1, "<execution>"));
        else if (sub === "resume")
          return await resumeRun(ctx, arg(1, "<execution>"), { data: o.data, wait: o.wait, timeout });
        else throw new UsageError(`unknown subcommand 'runs ${sub}'`);
        return 0;
      }
      case "logs":
        return await runLogs(ctx, arg(0, "<execution>"), { follow: o.follow });
      case "events": {
        const sub = arg(0, "a subcommand: publish or tail");
        if (sub === "publish") await publishEvent(ctx, arg(1, "<topic>"), { data: o.data, type: o.type });
        else if (sub === "tail") {
          const stop = new AbortController();
          process.once("SIGINT", () => stop.abort());
          await tailEvents(ctx, arg(1, "<topic>"), { from: o.from, signal: stop.signal });
        } else throw new UsageError(`unknown subcommand 'events ${sub}'`);
        return 0;
      }
      case "workers":
        await listWorkers(ctx);
        return 0;
      case "queues":
        await listQueues(ctx);
        return 0;
      case "schedules":
        await listSchedules(ctx);
        return 0;
      case "triggers":
        await listTriggers(ctx);
        return 0;
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`spool: ${err.message}\n(see spool --help)\n`);
      return 2;
    }
    if (err instanceof SpoolApiError) {
      process.stderr.write(`spool: ${err.message} (${err.status} ${err.errorType})\n`);
      return 1;
    }
    process.stderr.write(`spool: ${describe(err)}\n`);
    return 1;
  }
}
