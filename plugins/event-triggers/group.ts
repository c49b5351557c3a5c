/**
 * The event-trigger command group, registered with the database framework so that its
 * operations exist per source kind (`pg_create_event_trigger`, legacy `create_event_trigger`; only
 * PostgreSQL sources capture events), its objects are dependents of the columns they name
 * (run_sql drops need `cascade`) and follow renamed columns.
 */
import type * as v from '../../core/valibot.js';
import { SvcError } from '../../core/errors.js';
import type { OperationContext, OperationDef } from '../../core/plugin.js';
import {
  findSource,
  qtDisplay,
  qtKey,
  requireSource,
  requireTable,
  sameTable,
  updateTable,
  updateTableIfPresent,
  type CommandGroup,
  type DatabaseService,
  type DepTarget,
  type Dependent,
  type KindBinding,
  type Metadata,
  type SchemaRename,
  type SqlExecutor,
  type TableMeta,
} from '../database/index.js';
import { removeTrigger, triggerId } from './build.js';
import {
  createEventTriggerArgs,
  DEFAULT_TIMEOUT_SEC,
  LEASE_MARGIN_SEC,
  DeleteEventTriggerArgs,
  GetEventByIdArgs,
  GetEventInvocationLogsArgs,
  GetEventLogsArgs,
  InvokeEventTriggerArgs,
  namedColumns,
  orderTrigger,
  RedeliverEventArgs,
  triggersOf,
  type EventTriggerMeta,
  type OpSpec,
  type SubscribeColumns,
} from './definition.js';

const success = { message: 'success' };

/** Where an event trigger of a source is defined, by its name (names are unique per source). */
export function findTrigger(md: Metadata, source: string, name: string): { table: TableMeta; trigger: EventTriggerMeta } | undefined {
  for (const t of findSource(md, source)?.tables ?? []) {
    const trigger = triggersOf(t).find((x) => x.name === name);
    if (trigger) return { table: t, trigger };
  }
  return undefined;
}

const notExists = (name: string) => new SvcError('not-exists', `event trigger "${name}" does not exist`, { path: '$.args' });

function requireTrigger(md: Metadata, source: string, name: string) {
  requireSource(md, source);
  const found = findTrigger(md, source, name);
  if (!found) throw notExists(name);
  return found;
}

export function eventTriggersGroup(db: DatabaseService): CommandGroup {
  /** The source's executor for reads outside the request's transaction. */
  const reader = async (ctx: OperationContext, source: string): Promise<SqlExecutor> => {
    if (db.inTransaction(ctx.uow, source)) return db.transaction(ctx, source);
    return db.connection(requireSource(ctx.metadata, source)).executor;
  };
  /** How long a claimed event of a trigger stays claimed (the webhook's timeout and a margin). */
  const leaseOf = (ctx: OperationContext, source: string) => (trigger: string) => {
    const t = findTrigger(ctx.metadata, source, trigger)?.trigger;
    return (t?.retry_conf?.timeout_sec ?? DEFAULT_TIMEOUT_SEC) + LEASE_MARGIN_SEC;
  };

  function operations(bind: KindBinding): OperationDef[] {
    // Capture is the kind's (Note [Event capture]): a kind without it gets no event-trigger
    // operations.
    const capture = bind.kind.events;
    if (!capture) return [];

    const defaultSchema = bind.kind.dialect.defaultSchema;
    const createArgs = createEventTriggerArgs(bind.table);
    const create: OperationDef = {
      type: bind.name('create_event_trigger'),
      legacy: bind.legacy('create_event_trigger'),
      args: createArgs,
      mutates: true,
      run: async (a: v.InferOutput<typeof createArgs>, ctx) => {
        const table = requireTable(ctx.metadata, a.source, a.table, defaultSchema, '$.args');
        const existing = findTrigger(ctx.metadata, a.source, a.trigger.name);
        if (a.replace) {
          if (!existing) throw notExists(a.trigger.name);
          if (!sameTable(existing.table.table, a.table)) throw new SvcError('not-supported', 'cannot replace table or schema for trigger', { path: '$.args' });
        } else if (existing) {
          throw new SvcError('already-exists', `Event trigger with name "${a.trigger.name}" already exists`, { path: '$.args' });
        }
        // Hasura checks the listened columns here; payload columns are checked by the build.
        const info = (await db.introspection(ctx, a.source)).tables.get(qtKey(a.table));
        if (info) {
          for (const k of ['insert', 'update', 'delete'] as const) {
            const cols = a.trigger.definition[k]?.columns;
            if (!Array.isArray(cols)) continue;
            for (const c of cols) {
              if (!info.columns.some((x) => x.name === c)) throw new SvcError('not-exists', `column "${c}" does not exist`, { path: '$.args' });
            }
          }
        }
        const md = updateTable(ctx.metadata, a.source, table.table, defaultSchema, (t) => ({
          ...t,
          event_triggers: existing ? triggersOf(t).map((x) => (x.name === a.trigger.name ? a.trigger : x)) : [...triggersOf(t), a.trigger],
        }));
        return { metadata: md, response: success, defines: [triggerId(a.source, table.table, a.trigger.name)] };
      },
    };

    const del: OperationDef = {
      type: bind.name('delete_event_trigger'),
      legacy: bind.legacy('delete_event_trigger'),
      args: DeleteEventTriggerArgs,
      mutates: true,
      run: (a: { name: string; source: string }, ctx) => {
        const { table } = requireTrigger(ctx.metadata, a.source, a.name);
        return { metadata: removeTrigger(ctx.metadata, a.source, table.table, a.name), response: success };
      },
    };

    const redeliver: OperationDef = {
      type: bind.name('redeliver_event'),
      legacy: bind.legacy('redeliver_event'),
      args: RedeliverEventArgs,
      mutates: false,
      run: async (a: { event_id: string; source: string }, ctx) => {
        requireSource(ctx.metadata, a.source);
        await capture.redeliver(await db.transaction(ctx, a.source), a.event_id, leaseOf(ctx, a.source));
        return { response: success };
      },
    };

    const invoke: OperationDef = {
      type: bind.name('invoke_event_trigger'),
      legacy: bind.legacy('invoke_event_trigger'),
      args: InvokeEventTriggerArgs,
      mutates: false,
      run: async (a: { name: string; source: string; payload: unknown }, ctx) => {
        const { table, trigger } = requireTrigger(ctx.metadata, a.source, a.name);
        if (trigger.definition?.enable_manual !== true) throw new SvcError('not-supported', 'manual mode is not enabled for event trigger', { path: '$.args' });
        const tx = await db.transaction(ctx, a.source);
        await capture.ensureLog(tx);
        const id = await capture.insertManual(tx, table.table, a.name, a.payload, ctx.session.variables);
        return { response: { event_id: id } };
      },
    };

    const getLogs: OperationDef = {
      type: bind.name('get_event_logs'),
      args: GetEventLogsArgs,
      mutates: false,
      run: async (a: { name: string; source: string; limit: number; offset: number; status?: 'processed' | 'pending' }, ctx) => {
        requireTrigger(ctx.metadata, a.source, a.name);
        return { response: await capture.events(await reader(ctx, a.source), a.name, a.status, a.limit, a.offset) };
      },
    };

    const getInvocations: OperationDef = {
      type: bind.name('get_event_invocation_logs'),
      args: GetEventInvocationLogsArgs,
      mutates: false,
      run: async (a: { name: string; source: string; limit: number; offset: number }, ctx) => {
        requireTrigger(ctx.metadata, a.source, a.name);
        return { response: await capture.invocations(await reader(ctx, a.source), a.name, a.limit, a.offset) };
      },
    };

    const getById: OperationDef = {
      type: bind.name('get_event_by_id'),
      args: GetEventByIdArgs,
      mutates: false,
      run: async (a: { event_id: string; source: string; invocation_log_limit: number; invocation_log_offset: number }, ctx) => {
        requireSource(ctx.metadata, a.source);
        return { response: await capture.eventById(await reader(ctx, a.source), a.event_id, a.invocation_log_limit, a.invocation_log_offset) };
      },
    };

    return [create, del, redeliver, invoke, getLogs, getInvocations, getById];
  }

  /** Event triggers depend on their table and on the columns they name (Hasura: listen and payload
   * columns; `*` names none, so a trigger on `*` does not stop a column from being dropped). */
  function dependents(md: Metadata, target: DepTarget): Dependent[] {
    if (target.kind !== 'table' && target.kind !== 'column') return [];
    const source = findSource(md, target.source);
    const table = source && db.tableEntry(source, qtKey(target.table));
    if (!source || !table) return [];
    const out: Dependent[] = [];
    for (const et of triggersOf(table)) {
      if (target.kind === 'column' && !namedColumns(et).includes(target.column)) continue;
      out.push({
        id: `event_trigger@${source.name}:${qtKey(table.table)}:${et.name}`,
        description: `event-trigger ${qtDisplay(table.table, db.defaultSchemaOf(source) ?? '')}.${et.name} in source "${source.name}"`,
        remove: (m) => removeTrigger(m, source.name, table.table, et.name),
      });
    }
    return out;
  }

  /** A renamed column is renamed in the column lists of the triggers on its table; a renamed
   * table carries its entry, triggers included, and the SQL triggers follow the table. */
  function rename(md: Metadata, r: SchemaRename): Metadata {
    if (r.kind !== 'column') return md;
    const table = findSource(md, r.source)?.tables.find((t) => sameTable(t.table, r.table));
    if (!table || !triggersOf(table).some((et) => namedColumns(et).includes(r.from))) return md;
    const cols = (c: SubscribeColumns | undefined) => (Array.isArray(c) ? c.map((x) => (x === r.from ? r.to : x)) : c);
    const spec = (s: OpSpec | undefined): OpSpec | undefined => (s ? (s.payload === undefined ? { columns: cols(s.columns)! } : { columns: cols(s.columns)!, payload: cols(s.payload)! }) : undefined);
    return updateTableIfPresent(md, r.source, r.table, (t) => ({
      ...t,
      event_triggers: triggersOf(t).map((et) => {
        if (!namedColumns(et).includes(r.from)) return et;
        const d = et.definition;
        const definition: EventTriggerMeta['definition'] = {};
        if (d.insert) definition.insert = spec(d.insert);
        if (d.update) definition.update = spec(d.update);
        if (d.delete) definition.delete = spec(d.delete);
        if (d.enable_manual !== undefined) definition.enable_manual = d.enable_manual;
        return orderTrigger({ ...et, definition });
      }),
    }));
  }

  return { name: 'event-triggers', operations, dependents, rename };
}

