import pg from "pg";

/**
 * Group commit for the hot path's prepared statements. Under load every run's statements queue up
 * behind each other; sent one by one, each costs a round trip, a commit and, on this kind of
 * machine, two syscalls and a wake-up on each side, which is most of what a no-op step costs. What
 * queues while the pool's groups are busy leaves as one group instead: one message (a Bind and
 * Execute per statement, a Describe only the first time a statement runs on the connection, one
 * Sync), so one transaction and one commit. An idle process sends each statement at once, alone, so
 * the group adds no wait.
 *
 * Each statement keeps its meaning: the hot path's statements are single self-contained statements
 * (a conditional write and its reads in one), each reads a fresh snapshot (read committed), and every
 * caller is answered only after the group's commit. When one statement fails, or waits for a row lock
 * longer than GROUP_LOCK_TIMEOUT, Postgres rolls the whole group back; every statement of it is then
 * sent again on its own, outside the groups' slots, so each caller sees only its own statement's
 * outcome and a lock wait holds up neither the others nor the hot path. A lost connection is
 * reported to every caller as it would be for a single statement: the outcome is unknown.
 */

/** A named prepared statement, as `pool.query({ name, text, values })` takes it. */
export interface NamedStatement {
  name: string;
  text: string;
  values?: unknown[];
}

export interface GroupCommitOptions {
  /** Groups in flight at once (connections the hot path holds); more queue behind them. */
  maxGroups?: number;
  /** Statements in one group at most. */
  maxStatements?: number;
}

// node-postgres internals a group drives the wire with; @types/pg does not describe them.
interface Wire {
  parse(o: { name: string; text: string; types: number[] }): void;
  stream: { cork?(): void; uncork?(): void };
  parsedStatements: Record<string, string | undefined>;
  /** `values` already serialized (utils.prepareValue), as Query's valueMapper would. */
  bind(o: { portal: string; statement: string; values: unknown[] }): void;
  describe(o: { type: "P"; name: string }): void;
  execute(o: { portal: string; rows: number }): void;
  sync(): void;
}
const internals = pg as unknown as {
  utils: { prepareValue(value: unknown): unknown };
};

/** Writes messages to a connection as one socket write (node-postgres corks each query the same way). */
function corked(connection: pg.Connection, write: (wire: Wire) => void): void {
  const wire = connection as unknown as Wire;
  wire.stream.cork?.();
  try {
    write(wire);
  } finally {
    wire.stream.uncork?.();
  }
}

/** How long a grouped statement may wait for a row lock before its group gives way. */
const GROUP_LOCK_TIMEOUT: LockTimeout = "50ms";
/** A lock_timeout setting (written into the group's SET: a number of milliseconds only). */
export type LockTimeout = `${number}ms`;
/** SQLSTATE of a lock wait lock_timeout ended. */
const LOCK_NOT_AVAILABLE = "55P03";

/** How a group is sent: under which lock timeout, and whether its statements go again alone after a rollback. */
interface SendOptions {
  lockTimeout: LockTimeout;
  sendAgain: boolean;
}
const GROUPED: SendOptions = { lockTimeout: GROUP_LOCK_TIMEOUT, sendAgain: true };

/**
 * A statement as queued, its values serialized now; undefined (its caller failed) when a value
 * cannot be sent.
 */
function toPending(
  statement: NamedStatement,
  resolve: (result: pg.QueryResult) => void,
  reject: (error: unknown) => void,
): Pending | undefined {
  try {
    const wireValues = (statement.values ?? []).map((v) => internals.utils.prepareValue(v));
    return { statement, wireValues, resolve, reject };
  } catch (err) {
    reject(err);
    return undefined;
  }
}

/** Statements as queued, and each one's outcome. */
function pendingOf(statements: NamedStatement[]): { bundle: Pending[]; results: Promise<pg.QueryResult>[] } {
  const bundle: Pending[] = [];
  const results = statements.map(
    (statement) =>
      new Promise<pg.QueryResult>((resolve, reject) => {
        const pending = toPending(statement, resolve, reject);
        if (pending) bundle.push(pending);
      }),
  );
  return { bundle, results };
}

interface Pending {
  statement: NamedStatement;
  /** On the first statement of a bundle (queryTogether): how many statements must share its group. */
  bundle?: number;
  /** Its values as they go on the wire, serialized when it was queued (a value that cannot be fails its caller there). */
  wireValues: unknown[];
  resolve(result: pg.QueryResult): void;
  reject(error: unknown): void;
}

/**
 * What Postgres describes a prepared statement's result as (its RowDescription's fields, none for a
 * statement that returns no rows) and the parser of each column, learnt from the statement's first
 * execution in a group on a connection. Kept per connection: a statement prepared there keeps its
 * result's shape (were it to change, Postgres would refuse to run it), while one prepared after a
 * migration may differ.
 */
interface Described {
  text: string;
  fields: pg.FieldDef[];
  parsers: ((raw: string) => unknown)[];
}
const describedOn = new WeakMap<pg.Connection, Map<string, Described>>();

function descriptionOf(text: string, fields: pg.FieldDef[]): Described {
  // Results come in text format: a group binds none as binary. Frozen: every result shares them.
  const parsers = fields.map((f) => pg.types.getTypeParser(f.dataTypeID, "text"));
  return { text, fields: Object.freeze([...fields]) as pg.FieldDef[], parsers };
}

/** One statement's outcome, as pg.Pool.query gives it: rows as objects, parsed by column type. */
class GroupResult implements pg.QueryResult {
  command = "";
  rowCount: number | null = null;
  oid = 0;
  rows: pg.QueryResultRow[] = [];
  fields: pg.FieldDef[] = [];
  private parsers: ((raw: string) => unknown)[] = [];

  describeAs(d: Described): void {
    this.fields = d.fields;
    this.parsers = d.parsers;
  }

  addRow(raw: (string | null)[]): void {
    // A row unlike its description (which cannot happen on a connection that prepared the statement,
    // only behind a pooler that prepares it again elsewhere) fails rather than misreads.
    if (raw.length !== this.fields.length)
      throw new Error(`a row of ${raw.length} columns where ${this.fields.length} were described`);
    const row: pg.QueryResultRow = {};
    this.fields.forEach((field, i) => {
      const value = raw[i];
      row[field.name] = value === null || value === undefined ? null : this.parsers[i]?.(value);
    });
    this.rows.push(row);
  }

  /** The command tag: `INSERT <oid> <rows>`, `UPDATE <rows>`, `SELECT <rows>`, `CREATE TABLE`, … */
  complete(tag: string): void {
    const [, command = "", first, second] = /^([A-Za-z]+)(?: (\d+))?(?: (\d+))?/.exec(tag) ?? [];
    this.command = command;
    if (second !== undefined) {
      this.oid = Number(first);
      this.rowCount = Number(second);
    } else if (first !== undefined) {
      this.rowCount = Number(first);
    }
  }
}

/** The SET and RESET around a group. */
interface LockTimeoutStatements {
  set: NamedStatement;
  reset: NamedStatement;
}
const lockTimeoutStatementsOf = new Map<LockTimeout, LockTimeoutStatements>();

/**
 * The SET and RESET around a group under `lockTimeout`, as prepared statements (parsed once per
 * connection rather than with every group, as the hot path's own statements are).
 */
function lockTimeoutStatements(lockTimeout: LockTimeout): LockTimeoutStatements {
  let statements = lockTimeoutStatementsOf.get(lockTimeout);
  if (!statements) {
    statements = {
      set: { name: `spool_set_lock_timeout_${lockTimeout}`, text: `SET lock_timeout = '${lockTimeout}'` },
      reset: { name: "spool_reset_lock_timeout", text: "RESET lock_timeout" },
    };
    lockTimeoutStatementsOf.set(lockTimeout, statements);
  }
  return statements;
}

/** One group on the wire: a pg Submittable answering each message for the statement it belongs to. */
class StatementGroup implements pg.Submittable {
  readonly results: GroupResult[];
  /** A row that failed to parse, per statement: that statement's caller gets the error. */
  readonly rowErrors: unknown[];
  /** Per statement: whether its result is asked to be described and not yet learnt from the answer. */
  private readonly describing: boolean[];
  /** The statement the next message is about: -1 the SET before them, `length` the RESET after. */
  private current = -1;

  constructor(
    private readonly statements: Pending[],
    private readonly around: LockTimeoutStatements,
    private readonly described: Map<string, Described>,
    private readonly settled: (error: unknown) => void,
  ) {
    this.results = statements.map(() => new GroupResult());
    this.rowErrors = statements.map(() => undefined);
    // A statement whose result Postgres has described on this connection is not described again.
    this.describing = statements.map(({ statement }, i) => {
      const known = described.get(statement.name);
      if (known?.text !== statement.text) return true;
      this.results[i]?.describeAs(known);
      return false;
    });
  }

  submit(connection: pg.Connection): void {
    // A group holds the rows its first statements locked while a later one waits. It gives way
    // instead of waiting long (its statements are then sent alone): it can never be the other half
    // of a deadlock with a transaction that locks runs in their lock order. Both settings are
    // transactional, so an aborted group leaves the connection as it found it.
    const { set, reset } = this.around;
    corked(connection, (wire) => {
      const execute = (name: string, values: unknown[], describe: boolean) => {
        wire.bind({ portal: "", statement: name, values });
        if (describe) wire.describe({ type: "P", name: "" });
        wire.execute({ portal: "", rows: 0 });
      };
      execute(set.name, [], false);
      this.statements.forEach(({ statement, wireValues }, i) => {
        execute(statement.name, wireValues, this.describing[i] === true);
      });
      execute(reset.name, [], false);
      wire.sync();
    });
  }

  handleRowDescription(msg: { fields: pg.FieldDef[] }): void {
    this.learn(msg.fields);
  }

  handleDataRow(msg: { fields: (string | null)[] }): void {
    const result = this.results[this.current];
    if (!result || this.rowErrors[this.current] !== undefined) return;
    try {
      result.addRow(msg.fields);
    } catch (err) {
      this.rowErrors[this.current] = err;
      // Described again next time, should the description be what failed it.
      const statement = this.statements[this.current]?.statement;
      if (statement) this.described.delete(statement.name);
    }
  }

  handleCommandComplete(msg: { text: string }): void {
    // Described and no RowDescription came: the statement returns no rows.
    if (this.describing[this.current]) this.learn([]);
    this.results[this.current]?.complete(msg.text);
    this.current++;
  }

  handleEmptyQuery(): void {
    this.current++;
  }

  handlePortalSuspended(): void {}

  handleError(error: unknown): void {
    for (const { statement } of this.statements) this.described.delete(statement.name);
    this.settled(error);
  }

  handleReadyForQuery(): void {
    this.settled(null);
  }

  /** The current statement's result as Postgres described it, remembered for the next groups. */
  private learn(fields: pg.FieldDef[]): void {
    const statement = this.statements[this.current]?.statement;
    if (!statement || !this.describing[this.current]) return;
    const description = descriptionOf(statement.text, fields);
    this.results[this.current]?.describeAs(description);
    this.described.set(statement.name, description);
    this.describing[this.current] = false;
  }
}

/**
 * Prepares a named statement on a connection without running it (a Parse and a Sync). The client
 * records it as prepared from this object's name and text, as it does for its own queries.
 */
class Prepare implements pg.Submittable {
  constructor(
    readonly name: string,
    readonly text: string,
    private readonly done: (error: unknown) => void,
  ) {}

  submit(connection: pg.Connection): void {
    corked(connection, (wire) => {
      wire.parse({ name: this.name, text: this.text, types: [] });
      wire.sync();
    });
  }

  handleError(error: unknown): void {
    this.done(error);
  }

  handleReadyForQuery(): void {
    this.done(undefined);
  }
}

export class GroupCommit {
  private readonly queue: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly maxGroups: number;
  private readonly maxStatements: number;

  /** `single` sends one statement on its own (the pool's own query). */
  constructor(
    private readonly pool: pg.Pool,
    private readonly single: (statement: NamedStatement) => Promise<pg.QueryResult>,
    options: GroupCommitOptions = {},
  ) {
    this.maxGroups = options.maxGroups ?? 2;
    this.maxStatements = options.maxStatements ?? 32;
  }

  query(statement: NamedStatement): Promise<pg.QueryResult> {
    return new Promise((resolve, reject) => {
      const pending = toPending(statement, resolve, reject);
      if (pending) this.enqueue(pending);
    });
  }

  /**
   * Statements that go in the same group (one transaction), so a later one sees what an earlier one
   * wrote and no other group's lock stands between them (up to maxStatements of them; a longer list
   * takes a group of its own). Each still has its own outcome: after a failure they are sent again
   * alone, as any group's are.
   */
  queryTogether(statements: NamedStatement[]): Promise<pg.QueryResult>[] {
    const { bundle, results } = pendingOf(statements);
    if (bundle.length === 0) return results;
    (bundle[0] as Pending).bundle = bundle.length;
    this.enqueue(...bundle);
    return results;
  }

  private enqueue(...pending: Pending[]): void {
    this.queue.push(...pending);
    // Statements issued in the same turn of the event loop can share a group.
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        this.pump();
      });
    }
  }

  /**
   * Statements in one transaction of their own, at once, on a connection outside the groups' slots
   * (a lock wait in it holds up no group), under `lockTimeout`: when Postgres rolls it back (a lock
   * wait cut short, a deadlock, an error), every statement fails with that error; none is sent again.
   */
  queryTogetherAlone(statements: NamedStatement[], lockTimeout: LockTimeout): Promise<pg.QueryResult>[] {
    const { bundle, results } = pendingOf(statements);
    if (bundle.length > 0) {
      this.send(bundle, { lockTimeout, sendAgain: false }).catch((err: unknown) => {
        for (const p of bundle) p.reject(err);
      });
    }
    return results;
  }

  /** How many queued statements the next group takes: at most maxStatements, never part of a bundle. */
  private nextGroupSize(): number {
    let size = 0;
    while (size < this.queue.length) {
      const next = (this.queue[size] as Pending).bundle ?? 1;
      if (size > 0 && size + next > this.maxStatements) break;
      size += next;
    }
    return size;
  }

  private pump(): void {
    while (this.inFlight < this.maxGroups && this.queue.length > 0) {
      const group = this.queue.splice(0, this.nextGroupSize());
      this.inFlight++;
      void this.send(group)
        .then(
          // Sent again alone, outside the groups' slots: each may wait for a lock as long as it must.
          (again) => {
            for (const p of again) this.single(p.statement).then(p.resolve, p.reject);
          },
          (err: unknown) => {
            for (const p of group) p.reject(err);
          },
        )
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }

  /**
   * Sends a group (of one, too) on one connection. Resolves to the statements to send again alone:
   * all of them when Postgres rolled the group back for one statement's error or a lock wait;
   * every other caller has been answered.
   */
  private async send(group: Pending[], o: SendOptions = GROUPED): Promise<Pending[]> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      for (const p of group) p.reject(err);
      return [];
    }
    let lost: unknown;
    try {
      // A statement not yet prepared on this connection is prepared first (once per connection), so
      // a group never carries a Parse, whose fate after an error would be unknown.
      const parsed = (client as unknown as { connection: Wire }).connection.parsedStatements;
      const prepare = (name: string, text: string) =>
        new Promise<unknown>((done) => client.query(new Prepare(name, text, done)));
      const around = lockTimeoutStatements(o.lockTimeout);
      for (const { name, text } of [around.set, around.reset]) {
        if (parsed[name] === text) continue;
        const error = await prepare(name, text);
        if (error !== undefined) {
          lost = error;
          for (const p of group) p.reject(error);
          return [];
        }
      }
      const ready: Pending[] = [];
      for (const p of group) {
        const { name, text } = p.statement;
        if (lost === undefined && parsed[name] !== text) {
          const error = await prepare(name, text);
          if (error !== undefined && !rolledBackOnly(error)) lost = error;
          if (error !== undefined) {
            p.reject(error);
            continue;
          }
        }
        if (lost !== undefined) p.reject(lost);
        else ready.push(p);
      }
      if (ready.length === 0) return [];
      // Together or not at all: one that could not be prepared fails the rest with it.
      if (!o.sendAgain && ready.length < group.length) {
        for (const p of ready) p.reject(new Error("another statement of the group could not be prepared"));
        return [];
      }
      const outcome = await this.sendGroup(client, ready, around);
      if (outcome === undefined) return [];
      if (rolledBackOnly(outcome) && !o.sendAgain) {
        for (const p of ready) p.reject(outcome);
        return [];
      }
      // Alone already: only a wait the group's lock timeout cut short is worth sending again.
      if (rolledBackOnly(outcome) && (ready.length > 1 || outcome.code === LOCK_NOT_AVAILABLE)) return ready;
      lost = outcome;
      for (const p of ready) p.reject(outcome);
      return [];
    } catch (err) {
      lost = err;
      throw err;
    } finally {
      client.release(lost === undefined ? undefined : lost instanceof Error ? lost : new Error(String(lost)));
    }
  }

  /** Sends a group on `client`: undefined when it committed (every caller answered), else the error. */
  private sendGroup(
    client: pg.PoolClient,
    group: Pending[],
    around: LockTimeoutStatements,
  ): Promise<unknown> {
    return new Promise((done) => {
      const connection = (client as unknown as { connection: pg.Connection }).connection;
      let described = describedOn.get(connection);
      if (!described) {
        described = new Map<string, Described>();
        describedOn.set(connection, described);
      }
      const submitted = new StatementGroup(group, around, described, (error) => {
        if (error === null)
          group.forEach((p, i) => {
            const rowError = submitted.rowErrors[i];
            if (rowError !== undefined) p.reject(rowError);
            else p.resolve(submitted.results[i] as pg.QueryResult);
          });
        done(error ?? undefined);
      });
      client.query(submitted);
    });
  }
}

/**
 * An error after which the transaction was rolled back and the connection is fine: a statement's
 * ERROR. Anything else (a FATAL as the server ends the connection, a lost socket) may have come
 * after the commit, so nothing is sent again, as with a single statement.
 */
function rolledBackOnly(err: unknown): err is pg.DatabaseError {
  return err instanceof pg.DatabaseError && err.severity === "ERROR";
}

/**
 * A pg pool whose named statements (`query({ name, text, values })`, the hot path's) go through
 * group commit; everything else (Prisma's queries, transactions on a checked-out client) as before.
 */
export class GroupCommitPool extends pg.Pool {
  private readonly groups: GroupCommit;

  constructor(config: pg.PoolConfig, options: GroupCommitOptions = {}) {
    super(config);
    this.groups = new GroupCommit(this, (s) => super.query(s), options);
  }

  /** GroupCommit.queryTogether: statements in the same group (one transaction). */
  queryTogether(statements: NamedStatement[]): Promise<pg.QueryResult>[] {
    return this.groups.queryTogether(statements);
  }

  /** GroupCommit.queryTogetherAlone: statements in one transaction of their own, under a lock timeout. */
  queryTogetherAlone(statements: NamedStatement[], lockTimeout: LockTimeout): Promise<pg.QueryResult>[] {
    return this.groups.queryTogetherAlone(statements, lockTimeout);
  }

  // biome-ignore lint/suspicious/noExplicitAny: pg.Pool's query is overloaded; this keeps every overload.
  override query(...args: any[]): any {
    const [config, values, callback] = args;
    if (values === undefined && callback === undefined && isNamedStatement(config))
      return this.groups.query(config);
    return (super.query as (...a: unknown[]) => unknown)(...args);
  }
}

function isNamedStatement(config: unknown): config is NamedStatement {
  if (typeof config !== "object" || config === null) return false;
  const c = config as Record<string, unknown>;
  return (
    typeof c.name === "string" &&
    typeof c.text === "string" &&
    !("submit" in c) &&
    !("rowMode" in c) &&
    !("types" in c)
  );
}

/**
 * Named statements sent in one group (one transaction) when `pool` groups them (GroupCommitPool);
 * on another pool, each on its own. Each promise is its statement's outcome.
 */
export function queryTogether(pool: pg.Pool, statements: NamedStatement[]): Promise<pg.QueryResult>[] {
  if (pool instanceof GroupCommitPool) return pool.queryTogether(statements);
  return statements.map((s) => pool.query(s));
}

/**
 * Named statements in one transaction of their own under `lockTimeout`, on a connection outside the
 * group commits' slots (GroupCommit.queryTogetherAlone); on another pool, in a transaction on a
 * client of their own. When the transaction is rolled back, every statement fails with its error.
 */
export function queryTogetherAlone(
  pool: pg.Pool,
  statements: NamedStatement[],
  lockTimeout: LockTimeout,
): Promise<pg.QueryResult>[] {
  if (pool instanceof GroupCommitPool) return pool.queryTogetherAlone(statements, lockTimeout);
  if (statements.length === 0) return [];
  const all = (async () => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await client.query(`SET LOCAL lock_timeout = '${lockTimeout}'`);
      const results: pg.QueryResult[] = [];
      for (const s of statements) results.push(await client.query(s));
      await client.query("COMMIT");
      return results;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  })();
  return statements.map(async (_, i) => (await all)[i] as pg.QueryResult);
}
