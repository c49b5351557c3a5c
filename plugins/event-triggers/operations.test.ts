/**
 * Golden tests of the event-trigger operations on both endpoints: request -> status and body,
 * Hasura's messages where the SPEC leaves them open; the metadata they leave (export, replace),
 * dependencies on columns, and inconsistency from the environment.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { KernelApi, PluginDef } from '../../core/plugin.js';
import { builtinPlugins } from '../../server/plugins.js';
import { useServer } from '../../test/helpers.js';

/** The plugins with event delivery off, so that events stay pending for the event-log reads (a
 * fetch interval is not enough: commits and manual events wake the worker, Note [Waking on
 * commit] in worker.ts). */
const withoutDelivery: PluginDef[] = builtinPlugins.map((p) =>
  p.name !== 'event-triggers'
    ? p
    : {
        ...p,
        setup: (k: KernelApi) =>
          p.setup(
            new Proxy(k, {
              get: (t, key) => {
                if (key === 'worker') return () => {};
                const v = Reflect.get(t, key, t);
                return typeof v === 'function' ? v.bind(t) : v;
              },
            }),
          ),
      },
);

const s = useServer(
  `create schema hge_tests;
   create table hge_tests.test_t1 (c1 int, c2 text, c3 json);
   create table hge_tests.test_t2 (c1 int, c2 text);
   create table "Test_T3" (id serial primary key, "Name" text);
   create view v1 as select 1 as x;`,
  { env: { WEBHOOK_URL: 'http://127.0.0.1:1/hook', HEADER_SECRET: 's3cret' }, plugins: withoutDelivery },
);

const ok = { status: 200, body: { message: 'success' } };
const pick = ({ status, body }: { status: number; body: any }) => ({ status, body });
const q = async (body: unknown, headers?: Record<string, string>) => pick(await s.query(body, headers));
const m = async (body: unknown, headers?: Record<string, string>) => pick(await s.metadata(body, headers));
const t1 = { schema: 'hge_tests', name: 'test_t1' };
const base = { name: 't1_1', table: t1, webhook: 'http://127.0.0.1:1/hook', insert: { columns: '*' } };
const create = (args: Record<string, unknown>) => q({ type: 'create_event_trigger', args });
const pgCreate = (args: Record<string, unknown>) => m({ type: 'pg_create_event_trigger', args });
/** Hasura reports parse errors of legacy requests at `$` and every other error at `$.args`. */
const err = (status: number, code: string, error: string, path = code === 'parse-failed' ? '$' : '$.args') => ({ status, body: { code, error, path } });
const triggersOf = async (name = 'test_t1', schema = 'hge_tests') => (await s.tables()).find((t) => t.table.name === name && t.table.schema === schema)?.event_triggers;
const functions = async () =>
  (await s.runSql(`select proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace where nspname = 'svc_catalog' and proname like 'notify%' order by 1`)).result
    .slice(1)
    .map((r: string[]) => r[0]);

beforeEach(async () => {
  expect(await q({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
  for (const table of [t1, { schema: 'hge_tests', name: 'test_t2' }, 'Test_T3', 'v1']) {
    expect(await q({ type: 'track_table', args: { table } })).toMatchObject({ status: 200 });
  }
});

describe('create_event_trigger / pg_create_event_trigger', () => {
  it('creates, exports in Hasura\'s shape, and drops (legacy and metadata names)', async () => {
    expect(await create({ ...base, update: { columns: ['c1'], payload: ['c1', 'c2'] }, delete: { columns: '*' }, headers: [{ name: 'X-A', value: 'a' }, { name: 'X-B', value_from_env: 'HEADER_SECRET' }] })).toMatchObject(ok);
    expect(await triggersOf()).toEqual([
      {
        name: 't1_1',
        definition: { insert: { columns: '*' }, update: { columns: ['c1'], payload: ['c1', 'c2'] }, delete: { columns: '*' }, enable_manual: false },
        retry_conf: { num_retries: 0, interval_sec: 10, timeout_sec: 60 },
        webhook: 'http://127.0.0.1:1/hook',
        headers: [{ name: 'X-A', value: 'a' }, { name: 'X-B', value_from_env: 'HEADER_SECRET' }],
      },
    ]);
    expect(await functions()).toEqual(['notify_svc_t1_1_DELETE', 'notify_svc_t1_1_INSERT', 'notify_svc_t1_1_UPDATE']);
    expect(await q({ type: 'delete_event_trigger', args: { name: 't1_1' } })).toMatchObject(ok);
    expect(await triggersOf()).toBeUndefined();
    expect(await functions()).toEqual([]);

    expect(await pgCreate({ ...base, source: 'default', webhook: undefined, webhook_from_env: 'WEBHOOK_URL', enable_manual: true, retry_conf: { num_retries: 3, interval_sec: 5 } })).toMatchObject(ok);
    expect(await triggersOf()).toEqual([
      { name: 't1_1', definition: { insert: { columns: '*' }, enable_manual: true }, retry_conf: { num_retries: 3, interval_sec: 5 }, webhook_from_env: 'WEBHOOK_URL' },
    ]);
    expect(await m({ type: 'pg_delete_event_trigger', args: { name: 't1_1', source: 'default' } })).toMatchObject(ok);
  });

  it('a bulk that creates and deletes on case-sensitive names leaves nothing (Hasura\'s create_and_delete)', async () => {
    const r = await q({
      type: 'bulk',
      args: [
        { type: 'create_event_trigger', args: { name: 't1_3', table: { schema: 'public', name: 'Test_T3' }, insert: { columns: '*' }, update: { columns: '*' }, delete: { columns: '*' }, webhook: '{{WEBHOOK_URL}}' } },
        { type: 'delete_event_trigger', args: { name: 't1_3' } },
        { type: 'untrack_table', args: { table: { schema: 'public', name: 'Test_T3' } } },
      ],
    });
    expect(r).toMatchObject({ status: 200, body: [{ message: 'success' }, { message: 'success' }, { message: 'success' }] });
    expect(await functions()).toEqual([]);
  });

  it('a webhook template ({{VAR}}) is stored as given and resolved from the environment', async () => {
    expect(await create({ ...base, webhook: '{{WEBHOOK_URL}}/new' })).toMatchObject(ok);
    expect((await triggersOf())[0].webhook).toBe('{{WEBHOOK_URL}}/new');
  });

  it('keeps Hasura\'s keys it does not apply (cleanup_config, ...) and its transforms (applied: transform.test.ts)', async () => {
    const extra = { request_transform: { version: 2, template_engine: 'Kriti' }, cleanup_config: { schedule: '0 0 * * *', clear_older_than: 168 } };
    expect(await create({ ...base, ...extra })).toMatchObject(ok);
    expect((await triggersOf())[0]).toMatchObject(extra);
  });

  it('replace: true replaces the definition in place; only an existing trigger on the same table', async () => {
    expect(await create(base)).toMatchObject(ok);
    expect(await create({ ...base, insert: undefined, update: { columns: ['c1', 'c3'] }, delete: { columns: '*' }, webhook: 'http://x/new', retry_conf: { num_retries: 5, interval_sec: 5 }, replace: true })).toMatchObject(ok);
    expect(await triggersOf()).toEqual([
      { name: 't1_1', definition: { update: { columns: ['c1', 'c3'] }, delete: { columns: '*' }, enable_manual: false }, retry_conf: { num_retries: 5, interval_sec: 5 }, webhook: 'http://x/new' },
    ]);
    expect(await functions()).toEqual(['notify_svc_t1_1_DELETE', 'notify_svc_t1_1_UPDATE']);
    expect(await create({ ...base, table: { schema: 'hge_tests', name: 'test_t2' }, replace: true })).toEqual(err(400, 'not-supported', 'cannot replace table or schema for trigger'));
    expect(await create({ ...base, name: 'nope', replace: true })).toEqual(err(400, 'not-exists', 'event trigger "nope" does not exist'));
  });

  it('names are unique in a source, whatever the table', async () => {
    expect(await create(base)).toMatchObject(ok);
    expect(await create({ ...base, table: { schema: 'hge_tests', name: 'test_t2' } })).toEqual(err(400, 'already-exists', 'Event trigger with name "t1_1" already exists'));
  });

  it('refuses what Hasura\'s parser refuses, with its messages and paths', async () => {
    expect(await create({ ...base, insert: undefined })).toEqual(err(400, 'parse-failed', 'atleast one amongst insert/update/delete/enable_manual spec must be provided'));
    expect(await pgCreate({ ...base, insert: undefined })).toEqual(err(400, 'parse-failed', 'atleast one amongst insert/update/delete/enable_manual spec must be provided', '$.args'));
    expect(await create({ ...base, name: '' })).toEqual(err(400, 'parse-failed', 'empty string not allowed', '$.name'));
    expect(await create({ ...base, name: 'bad name' })).toEqual(err(400, 'parse-failed', 'only alphanumeric and underscore and hyphens allowed for name'));
    expect(await create({ ...base, name: '1abc' })).toEqual(err(400, 'parse-failed', 'only alphanumeric and underscore and hyphens allowed for name'));
    expect(await create({ ...base, name: 'a'.repeat(43) })).toEqual(err(400, 'parse-failed', 'event trigger name can be at most 42 characters'));
    expect(await create({ ...base, webhook_from_env: 'WEBHOOK_URL' })).toEqual(err(400, 'parse-failed', 'only one of webhook or webhook_from_env should be given'));
    expect(await create({ ...base, webhook: undefined })).toEqual(err(400, 'parse-failed', 'must provide webhook or webhook_from_env'));
    expect(await create({ ...base, update: { columns: [] } })).toEqual(err(400, 'parse-failed', 'found empty column specification'));
    expect(await create({ ...base, update: { columns: '*', payload: [] } })).toEqual(err(400, 'parse-failed', 'found empty payload specification'));
    expect(await create({ ...base, insert: { columns: 'c1' } })).toEqual(err(400, 'parse-failed', 'only * or [] allowed', '$.insert.columns'));
    expect(await create({ ...base, insert: { columns: 3 } })).toEqual(err(400, 'parse-failed', 'unexpected columns', '$.insert.columns'));
    expect(await create({ ...base, insert: {} })).toEqual(err(400, 'parse-failed', 'key "columns" not found', '$.insert'));
    expect(await create({ ...base, headers: [{ name: 'X' }] })).toEqual(err(400, 'parse-failed', 'expecting value or value_from_env keys', '$.headers[0]'));
    expect(await create({ ...base, headers: [{ name: 'X', value: 'a', value_from_env: 'B' }] })).toEqual(err(400, 'parse-failed', 'expecting only one of value or value_from_env keys', '$.headers[0]'));
    expect(await create({ ...base, headers: [{ name: 'X', value_from_env: 'SVC_GRAPHQL_ADMIN_SECRET' }] })).toEqual(
      err(400, 'parse-failed', 'env variables starting with "SVC_GRAPHQL_" are not allowed in value_from_env: SVC_GRAPHQL_ADMIN_SECRET', '$.headers[0]'),
    );
    expect(await create({ ...base, headers: ['X'] })).toEqual(err(400, 'parse-failed', 'expecting object for headers', '$.headers[0]'));
    expect(await create({ ...base, retry_conf: { num_retries: -1 } })).toEqual(err(400, 'parse-failed', 'num_retries must not be negative', '$.retry_conf.num_retries'));
    expect(await create({ ...base, retry_conf: { timeout_sec: 0 } })).toEqual(err(400, 'parse-failed', 'timeout_sec must be at least 1', '$.retry_conf.timeout_sec'));
    expect(await create({ ...base, table: 'nope' })).toEqual(err(400, 'not-exists', 'table "nope" does not exist in source: default'));
    expect(await create({ ...base, update: { columns: ['nope'] } })).toEqual(err(400, 'not-exists', 'column "nope" does not exist'));
    expect(await pgCreate({ ...base, source: 'other' })).toEqual(err(400, 'not-exists', 'source with name "other" does not exist', '$.args.source'));
    // Payload columns are checked by the build: the new trigger is inconsistent.
    const r = await create({ ...base, insert: { columns: '*', payload: ['nope'] } });
    expect(r).toMatchObject(err(400, 'invalid-configuration', 'Inconsistent object: in table "hge_tests.test_t1": in event trigger "t1_1": column "nope" does not exist'));
    expect(await create({ ...base, table: 'v1' })).toMatchObject(err(400, 'invalid-configuration', 'Inconsistent object: in table "v1": in event trigger "t1_1": event triggers can only be defined on tables, "v1" is not a table'));
    expect(await triggersOf()).toBeUndefined();
  });

  it('a webhook or header from an unset environment variable is an inconsistency, not a crash', async () => {
    expect(await create({ ...base, webhook: undefined, webhook_from_env: 'NOT_SET' })).toMatchObject(
      err(400, 'invalid-configuration', 'Inconsistent object: in table "hge_tests.test_t1": in event trigger "t1_1": environment variable \'NOT_SET\' not set'),
    );
    expect(await create({ ...base, webhook: '{{NOT_SET}}/x' })).toMatchObject(
      err(400, 'invalid-configuration', 'Inconsistent object: in table "hge_tests.test_t1": in event trigger "t1_1": Value for environment variables not found: NOT_SET'),
    );
    expect(await create({ ...base, headers: [{ name: 'X', value_from_env: 'NOT_SET' }] })).toMatchObject({ status: 400, body: { code: 'invalid-configuration' } });
    // With allow_inconsistent_metadata the trigger is kept, inconsistent; the server keeps serving.
    const doc = (await m({ type: 'export_metadata', version: 2, args: {} })).body.metadata;
    const table = doc.sources[0].tables.find((t: any) => t.table.name === 'test_t1');
    table.event_triggers = [{ name: 'env_t', definition: { insert: { columns: '*' } }, retry_conf: { num_retries: 0, interval_sec: 10 }, webhook_from_env: 'NOT_SET' }];
    const r = await m({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: doc } });
    expect(r.status).toBe(200);
    expect(r.body.inconsistent_objects).toEqual([
      {
        type: 'event_trigger',
        name: 'event_trigger env_t in table hge_tests.test_t1 in source default',
        reason: 'Inconsistent object: in table "hge_tests.test_t1": in event trigger "env_t": environment variable \'NOT_SET\' not set',
        definition: { source: 'default', table: t1, configuration: { name: 'env_t', definition: { insert: { columns: '*' } }, retry_conf: { num_retries: 0, interval_sec: 10 }, webhook_from_env: 'NOT_SET' } },
      },
    ]);
    expect((await s.request('GET', '/healthz')).text).toBe('WARN: inconsistent objects in schema');
    // Its capture still runs: the events wait until the variable is set.
    expect(await functions()).toEqual(['notify_svc_env_t_INSERT']);
    expect(await q({ type: 'drop_inconsistent_metadata', args: {} })).toMatchObject(ok);
    expect(await triggersOf()).toBeUndefined();
    expect(await functions()).toEqual([]);
  });
});

describe('delete_event_trigger', () => {
  it('refuses an unknown trigger', async () => {
    expect(await q({ type: 'delete_event_trigger', args: { name: 'nope' } })).toEqual(err(400, 'not-exists', 'event trigger "nope" does not exist'));
    expect(await m({ type: 'pg_delete_event_trigger', args: { name: 'nope' } })).toEqual(err(400, 'not-exists', 'event trigger "nope" does not exist', '$.args'));
    expect(await m({ type: 'pg_delete_event_trigger', args: {} })).toEqual(err(400, 'parse-failed', 'key "name" not found', '$.args'));
  });
});

describe('invoke, redeliver and the event log reads', () => {
  beforeEach(async () => {
    await s.runSql('delete from svc_catalog.event_log; delete from svc_catalog.event_invocation_logs').catch(() => {});
    expect(await create({ ...base, name: 't1_enabled', enable_manual: true })).toMatchObject(ok);
    expect(await create({ ...base, name: 't1_disabled', enable_manual: false })).toMatchObject(ok);
  });

  it('pg_invoke_event_trigger writes a MANUAL event when enable_manual is on', async () => {
    const r = await m({ type: 'pg_invoke_event_trigger', args: { name: 't1_enabled', payload: { some_key: 'some_value' } } }, { 'x-svc-role': 'admin', 'x-svc-user-id': '3' });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['event_id']);
    const logs = await m({ type: 'pg_get_event_logs', args: { name: 't1_enabled' } });
    expect(logs.status).toBe(200);
    expect(logs.body).toEqual([
      {
        id: r.body.event_id,
        schema_name: 'hge_tests',
        table_name: 'test_t1',
        trigger_name: 't1_enabled',
        payload: { op: 'MANUAL', data: { old: null, new: { some_key: 'some_value' } }, session_variables: { 'x-svc-role': 'admin', 'x-svc-user-id': '3' } },
        delivered: false,
        error: false,
        tries: 0,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
        locked: null,
        next_retry_at: null,
        archived: false,
      },
    ]);
    expect((await q({ type: 'invoke_event_trigger', args: { name: 't1_enabled', payload: 1 } })).status).toBe(200);
    expect(await m({ type: 'pg_invoke_event_trigger', args: { name: 't1_disabled', payload: { some_key: 'some_value' } } })).toEqual(
      err(400, 'not-supported', 'manual mode is not enabled for event trigger', '$.args'),
    );
    expect(await m({ type: 'pg_invoke_event_trigger', args: { name: 'nope', payload: {} } })).toEqual(err(400, 'not-exists', 'event trigger "nope" does not exist', '$.args'));
    expect(await m({ type: 'pg_invoke_event_trigger', args: { name: 't1_enabled' } })).toEqual(err(400, 'parse-failed', 'key "payload" not found', '$.args'));
  });

  it('pg_get_event_logs filters by status; pg_get_event_by_id gives the event and its invocations', async () => {
    await s.runSql(`insert into hge_tests.test_t1 (c1, c2) values (1, 'a'), (2, 'b')`);
    const all = (await m({ type: 'pg_get_event_logs', args: { name: 't1_enabled' } })).body;
    expect(all.map((e: any) => e.payload.data.new.c1).sort()).toEqual([1, 2]);
    expect(all.every((e: any) => e.payload.op === 'INSERT' && e.payload.session_variables === null)).toBe(true);
    expect((await m({ type: 'pg_get_event_logs', args: { name: 't1_enabled', status: 'pending', limit: 1 } })).body).toHaveLength(1);
    expect((await m({ type: 'pg_get_event_logs', args: { name: 't1_enabled', status: 'processed' } })).body).toEqual([]);
    expect((await m({ type: 'pg_get_event_logs', args: { name: 't1_enabled', offset: 2 } })).body).toEqual([]);
    expect(await m({ type: 'pg_get_event_logs', args: { name: 't1_enabled', status: 'done' } })).toEqual(
      err(400, 'parse-failed', 'event logs status can only be one of the following: processed or pending', '$.args.status'),
    );
    expect(await m({ type: 'pg_get_event_logs', args: { name: 'nope' } })).toEqual(err(400, 'not-exists', 'event trigger "nope" does not exist', '$.args'));
    expect((await m({ type: 'pg_get_event_invocation_logs', args: { name: 't1_enabled' } })).body).toEqual([]);
    expect(await m({ type: 'pg_get_event_invocation_logs', args: { name: 'nope' } })).toEqual(err(400, 'not-exists', 'event trigger "nope" does not exist', '$.args'));
    const one = await m({ type: 'pg_get_event_by_id', args: { event_id: all[0].id } });
    expect(one).toMatchObject({ status: 200, body: { event: all[0], invocations: [] } });
    expect(await m({ type: 'pg_get_event_by_id', args: { event_id: 'nope' } })).toEqual(err(400, 'not-exists', 'event id nope does not exist', '$.args'));
  });

  it('pg_redeliver_event resets an event; unknown or claimed events are refused', async () => {
    await s.runSql(`insert into hge_tests.test_t1 (c1) values (1)`);
    const [ev] = (await m({ type: 'pg_get_event_logs', args: { name: 't1_disabled' } })).body;
    await s.runSql(`update svc_catalog.event_log set error = true, tries = 4 where id = '${ev.id}'`);
    expect(await m({ type: 'pg_redeliver_event', args: { event_id: ev.id } })).toMatchObject(ok);
    expect((await m({ type: 'pg_get_event_by_id', args: { event_id: ev.id } })).body.event).toMatchObject({ error: false, delivered: false, tries: 0 });
    expect(await q({ type: 'redeliver_event', args: { event_id: 'nope' } })).toEqual(err(400, 'not-exists', 'event not found'));
    await s.runSql(`update svc_catalog.event_log set locked = now() where id = '${ev.id}'`);
    expect(await m({ type: 'pg_redeliver_event', args: { event_id: ev.id } })).toEqual(err(400, 'busy', 'event is already being processed', '$.args'));
    // A claim older than the trigger's timeout and margin is a crashed delivery's: redelivery takes over.
    await s.runSql(`update svc_catalog.event_log set locked = now() - interval '10 minutes' where id = '${ev.id}'`);
    expect(await m({ type: 'pg_redeliver_event', args: { event_id: ev.id } })).toMatchObject(ok);
  });

  it('deleting a trigger archives its pending events', async () => {
    await s.runSql(`insert into hge_tests.test_t1 (c1) values (1)`);
    expect(await q({ type: 'delete_event_trigger', args: { name: 't1_disabled' } })).toMatchObject(ok);
    const rows = (await s.runSql(`select trigger_name, archived from svc_catalog.event_log order by 1`)).result;
    expect(rows).toEqual([['trigger_name', 'archived'], ['t1_disabled', 't'], ['t1_enabled', 'f']]);
  });
});

describe('metadata: export, replace, dependencies', () => {
  it('replace_metadata validates and normalises event triggers, and exports them as given', async () => {
    const doc = (await m({ type: 'export_metadata', version: 2, args: {} })).body.metadata;
    const table = doc.sources[0].tables.find((t: any) => t.table.name === 'test_t1');
    table.event_triggers = [
      {
        name: 'imported',
        definition: { enable_manual: false, insert: { columns: '*' }, update: { columns: ['c1'], payload: null } },
        retry_conf: { interval_sec: 10, num_retries: 0, timeout_sec: 60 },
        webhook: 'http://h/x',
        headers: [{ name: 'a', value: 'b' }],
        request_transform: { version: 2, template_engine: 'Kriti' },
      },
    ];
    expect(await m({ type: 'replace_metadata', args: doc })).toMatchObject(ok);
    expect(await triggersOf()).toEqual([
      {
        name: 'imported',
        definition: { insert: { columns: '*' }, update: { columns: ['c1'] }, enable_manual: false },
        retry_conf: { num_retries: 0, interval_sec: 10, timeout_sec: 60 },
        webhook: 'http://h/x',
        headers: [{ name: 'a', value: 'b' }],
        request_transform: { version: 2, template_engine: 'Kriti' },
      },
    ]);
    expect(await functions()).toEqual(['notify_svc_imported_INSERT', 'notify_svc_imported_UPDATE']);
    table.event_triggers = [{ name: 'x', definition: { insert: { columns: 'c1' } }, retry_conf: { num_retries: 0, interval_sec: 1 } }];
    const tables = doc.sources[0].tables;
    expect(await m({ type: 'replace_metadata', args: doc })).toEqual(
      err(400, 'parse-failed', 'only * or [] allowed', `$.args.sources[0].tables[${tables.indexOf(table)}].event_triggers[0].definition.insert.columns`),
    );
    // Hasura's document keeps retry_conf required: not here (the SPEC gives its defaults).
    table.event_triggers = [{ name: 'x', definition: { insert: { columns: '*' } }, retry_conf: {}, webhook: 'http://h' }];
    expect(await m({ type: 'replace_metadata', args: doc })).toMatchObject(ok);
    expect((await triggersOf())[0].retry_conf).toEqual({ num_retries: 0, interval_sec: 10 });
    expect(await functions()).toEqual(['notify_svc_x_INSERT']);
  });

  it('run_sql dropping a column a trigger names needs cascade (Hasura\'s selected_cols_dep and selected_payload_dep)', async () => {
    expect(await create({ ...base, name: 't1_cols', update: { columns: ['c1'] }, delete: { columns: '*', payload: ['c2'] } })).toMatchObject(ok);
    expect(await q({ type: 'run_sql', args: { sql: 'alter table hge_tests.test_t1 drop column c1' } })).toEqual(
      err(400, 'dependency-error', 'cannot drop due to the following dependent objects: event-trigger hge_tests.test_t1.t1_cols in source "default"', '$.args'),
    );
    expect(await q({ type: 'run_sql', args: { sql: 'alter table hge_tests.test_t1 drop column c2' } })).toMatchObject({ status: 400, body: { code: 'dependency-error' } });
    // c3 is not named: `*` depends on no column.
    expect(await q({ type: 'run_sql', args: { sql: 'alter table hge_tests.test_t1 drop column c3' } })).toMatchObject({ status: 200 });
    expect(await q({ type: 'run_sql', args: { sql: 'alter table hge_tests.test_t1 drop column c1', cascade: true } })).toMatchObject({ status: 200 });
    expect(await triggersOf()).toBeUndefined();
    expect(await functions()).toEqual([]);
    await s.runSql('alter table hge_tests.test_t1 add column c1 int, add column c3 json');
  });

  it('a renamed column is renamed in the triggers, and capture goes on', async () => {
    expect(await create({ ...base, update: { columns: ['c1'], payload: ['c1', 'c2'] } })).toMatchObject(ok);
    await s.runSql('alter table hge_tests.test_t1 rename column c1 to c1_new');
    expect((await triggersOf())[0].definition).toEqual({ insert: { columns: '*' }, update: { columns: ['c1_new'], payload: ['c1_new', 'c2'] }, enable_manual: false });
    await s.runSql(`delete from svc_catalog.event_log; insert into hge_tests.test_t1 (c1_new, c2) values (7, 'x'); update hge_tests.test_t1 set c1_new = 8 where c1_new = 7`);
    const logs = (await m({ type: 'pg_get_event_logs', args: { name: 't1_1' } })).body;
    expect(logs.map((e: any) => e.payload.data.new)).toEqual(expect.arrayContaining([{ c1_new: 8, c2: 'x' }]));
    await s.runSql('alter table hge_tests.test_t1 rename column c1_new to c1');
  });

  it('payload and listened columns may have any name', async () => {
    await s.runSql(`create table odd (id int, payload text, "Mixed_Case" int, "select" int)`);
    expect(await q({ type: 'track_table', args: { name: 'odd' } })).toMatchObject(ok);
    expect(await create({ ...base, name: 'odd', table: 'odd', insert: { columns: '*', payload: ['payload', 'Mixed_Case', 'select'] }, update: { columns: ['Mixed_Case'] } })).toMatchObject(ok);
    await s.runSql(`insert into odd values (1, 'p', 2, 3); update odd set payload = 'q'; update odd set "Mixed_Case" = 4`);
    const logs = (await m({ type: 'pg_get_event_logs', args: { name: 'odd' } })).body.reverse();
    expect(logs.map((e: any) => [e.payload.op, e.payload.data.new])).toEqual([
      ['INSERT', { payload: 'p', Mixed_Case: 2, select: 3 }],
      ['UPDATE', { id: 1, payload: 'q', Mixed_Case: 4, select: 3 }],
    ]);
    await s.runSql('drop table odd cascade');
  });

  it('untrack_table and clear_metadata remove the triggers and their SQL', async () => {
    expect(await create(base)).toMatchObject(ok);
    expect(await q({ type: 'untrack_table', args: { table: t1 } })).toMatchObject(ok);
    expect(await functions()).toEqual([]);
    expect(await q({ type: 'track_table', args: { table: t1 } })).toMatchObject(ok);
    expect(await create(base)).toMatchObject(ok);
    expect(await q({ type: 'clear_metadata', args: {} })).toMatchObject(ok);
    expect(await functions()).toEqual([]);
    // A table dropped by run_sql takes its triggers along (no cascade needed: they are its own).
    await s.runSql('create table gone (id int)');
    expect(await q({ type: 'track_table', args: { name: 'gone' } })).toMatchObject(ok);
    expect(await create({ ...base, name: 'gone_t', table: 'gone' })).toMatchObject(ok);
    expect(await functions()).toEqual(['notify_svc_gone_t_INSERT']);
    expect(await q({ type: 'run_sql', args: { sql: 'drop table gone' } })).toMatchObject({ status: 200 });
    expect(await triggersOf('gone', 'public')).toBeUndefined();
    expect(await functions()).toEqual([]);
  });

  it('non-admin requests are refused', async () => {
    expect(await m({ type: 'pg_get_event_logs', args: { name: 'x' } }, { 'x-svc-role': 'user' })).toEqual({ status: 400, body: { code: 'access-denied', error: 'restricted access : admin only', path: '$.args' } });
  });
});
