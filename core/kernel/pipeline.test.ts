/**
 * The steps of the metadata change pipeline (core/kernel/pipeline.ts), driven directly on a real
 * catalog and real source transactions, without plugins: what each step writes, and that a failed
 * step leaves nothing behind (Note [Unit of work] in core/uow.ts). The end-to-end behaviour through
 * HTTP is in metadata-management.test.ts and plugins/postgres/admin/run-sql.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { TypedEmitter } from 'tiny-typed-emitter';
import type { BuildResult, BuildStepDef, InconsistentObject, KernelApi, KernelEvents, Metadata, OperationContext, OperationDef, OperationResult, Session } from '../plugin.js';
import { CatalogStore } from '../catalog/store.js';
import { runBuild } from '../schema-cache/build.js';
import { UnitOfWork } from '../uow.js';
import { parseEnvelope } from '../envelope/envelope.js';
import { SvcError } from '../errors.js';
import { checkInconsistencies, MetadataPipeline, type Committed, type Items } from './pipeline.js';
import { captureLogger, createDatabase } from '../../test/helpers.js';

/** The one kind of metadata object here: a thing, which the build finds inconsistent when broken. */
interface Thing {
  name: string;
  broken?: boolean;
}

let sql: postgres.Sql;
let schemas = 0;
const log = captureLogger([]);
const admin: Session = { role: 'admin', variables: {}, isAdmin: true };

beforeAll(async () => {
  const db = await createDatabase();
  sql = postgres(db.url, { max: 6, onnotice: () => {} });
  await sql`create table work (id text primary key)`;
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
});

/** A pipeline on its own catalog schema, with the kernel's part (state, events) kept here. */
async function setup() {
  const schema = `pipeline_${++schemas}`;
  let builds = 0;
  const steps: BuildStepDef[] = [
    {
      name: 'things',
      run: (ctx) => {
        builds++;
        for (const t of (ctx.metadata.things as Thing[] | undefined) ?? []) {
          if (!t.broken) continue;
          ctx.inconsistent({
            type: 'thing',
            name: t.name,
            reason: `thing ${t.name} is broken`,
            definition: t,
            id: `thing:${t.name}`,
          });
        }
      },
    },
  ];
  const codec = { split: (md: Metadata) => Object.entries(md), join: (parts: [string, unknown][]) => Object.fromEntries(parts) as Metadata };
  const catalog = new CatalogStore(sql, codec, schema);
  await catalog.init({ version: 3, things: [] });
  const loaded = await catalog.load();
  const uow = new UnitOfWork();
  let state: Committed = { ...loaded, build: await runBuild(steps, loaded.metadata, undefined, {}, uow, log) };
  await uow.commit();
  const events = new TypedEmitter<KernelEvents>();
  const changed: { build: BuildResult; resourceVersion: number }[] = [];
  events.on('metadataChanged', (build, resourceVersion) => changed.push({ build, resourceVersion }));
  const pipeline = new MetadataPipeline({
    steps: () => steps,
    log,
    api: {} as KernelApi,
    events,
    catalog,
    committed: () => state,
    install: (next) => {
      state = next;
    },
    exportDocument: (md) => md,
  });
  const apply = (runs: OperationDef['run'][], envelope: Record<string, unknown> = {}, versions?: Items['versions']) => {
    const items: Items = runs.map((run) => ({ op: { type: 'test', args: {} as never, mutates: true, run }, args: {}, version: 1 }));
    if (versions) Object.assign(items, { bulk: true, versions });
    return pipeline.apply('metadata', parseEnvelope({ type: 'test', args: {}, ...envelope }), items, admin, true);
  };
  /** What another instance would do to the catalog. */
  const other = {
    write: () => sql`update ${sql(schema)}.state set resource_version = resource_version + 1`,
    bumpEpoch: () => sql`update ${sql(schema)}.state set epoch = epoch + 1`,
  };
  return {
    schema,
    apply,
    state: () => state,
    changed,
    builds: () => builds,
    other,
    stamp: () => catalog.stamp(),
    /** The document as a fresh load of the catalog reads it. */
    stored: async () => (await new CatalogStore(sql, codec, schema).load()).metadata,
  };
}

/** How each source transaction of `work` ended (an open one would hide its row just as well as a
 * rolled-back one, so the row alone does not tell). */
const ended = new Map<string, 'committed' | 'rolled back'>();

/** Inserts `id` into the work table in a source transaction of the unit of work; `onCommit` runs
 * when the unit of work commits, before the source transaction does. */
async function work(uow: UnitOfWork, id: string, onCommit?: () => Promise<void>): Promise<void> {
  await uow.get(`work:${id}`, async () => {
    const conn = await sql.reserve();
    await conn`begin`;
    await conn`insert into work values (${id})`;
    return {
      value: conn,
      resource: {
        async commit() {
          await onCommit?.();
          await conn`commit`;
          conn.release();
          ended.set(id, 'committed');
        },
        async rollback() {
          await conn`rollback`;
          conn.release();
          ended.set(id, 'rolled back');
        },
      },
    };
  });
}

/** Whether the source work `id` committed (its row is there) or was rolled back (it is not). */
const done = async (id: string) => {
  const there = (await sql`select 1 from work where id = ${id}`).length === 1;
  expect(ended.get(id)).toBe(there ? 'committed' : 'rolled back');
  return there;
};
const withThings = (ctx: OperationContext, ...things: Thing[]): Metadata => ({
  ...ctx.metadata,
  things: [...((ctx.metadata.things as Thing[]) ?? []), ...things],
});

describe('run, build and check, commit, swap', () => {
  it('a change: the catalog CAS, then the source work inside the catalog transaction, then the swap; responses see the new build', async () => {
    const p = await setup();
    const before = p.state();
    let seen: { resourceVersion: number; swapped: boolean } | undefined;
    const result = await p.apply([
      async (_a, ctx) => {
        await work(ctx.uow, 'change', async () => {
          // The unit of work commits after the CAS succeeded and before the catalog commits.
          const [row] = await sql`select resource_version from ${sql(p.schema)}.state`;
          seen = { resourceVersion: Number(row!.resource_version), swapped: p.changed.length > 0 };
        });
        return { metadata: withThings(ctx, { name: 'a' }), response: (b: BuildResult) => ({ same: b === p.state().build }) };
      },
    ]);
    expect(result).toEqual({ same: true });
    expect(seen).toEqual({ resourceVersion: before.resourceVersion, swapped: false });
    expect(await done('change')).toBe(true);
    expect(await p.stamp()).toEqual({ resourceVersion: before.resourceVersion + 1, epoch: before.epoch });
    expect(await p.stored()).toEqual({ version: 3, things: [{ name: 'a' }] });
    expect(p.state()).toMatchObject({ resourceVersion: before.resourceVersion + 1, epoch: before.epoch, metadata: { things: [{ name: 'a' }] } });
    expect(p.changed).toEqual([{ build: p.state().build, resourceVersion: before.resourceVersion + 1 }]);
  });

  it('a failed catalog CAS rolls the source work back and swaps nothing', async () => {
    const p = await setup();
    const before = p.state();
    // Another instance wrote the catalog after this one last caught up.
    await p.other.write();
    const r = p.apply([
      async (_a, ctx) => {
        await work(ctx.uow, 'lost-cas');
        return { metadata: withThings(ctx, { name: 'a' }), response: 'ok' };
      },
    ]);
    await expect(r).rejects.toThrow(SvcError);
    await expect(r).rejects.toMatchObject({ code: 'conflict', status: 409, path: '$', message: 'metadata resource version referenced did not match current version' });
    expect(await done('lost-cas')).toBe(false);
    expect(await p.stored()).toEqual({ version: 3, things: [] });
    expect(p.state()).toBe(before);
    expect(p.changed).toEqual([]);
  });

  it('a build that adds a new inconsistency writes nothing: no catalog write, the source work rolled back, no swap', async () => {
    const p = await setup();
    const before = p.state();
    const stamp = await p.stamp();
    const r = p.apply([
      async (_a, ctx) => {
        await work(ctx.uow, 'new-inconsistency');
        return { metadata: withThings(ctx, { name: 'b', broken: true }), response: 'ok' };
      },
    ]);
    await expect(r).rejects.toMatchObject({
      code: 'unexpected',
      status: 400,
      path: '$.args',
      message: 'cannot continue due to new inconsistent metadata',
      internal: [{ type: 'thing', name: 'b', reason: 'thing b is broken', definition: { name: 'b', broken: true } }],
    });
    expect(await done('new-inconsistency')).toBe(false);
    expect(await p.stamp()).toEqual(stamp);
    expect(await p.stored()).toEqual({ version: 3, things: [] });
    expect(p.state()).toBe(before);
    expect(p.changed).toEqual([]);
  });

  it('a failing item of a bulk rolls back the source work of the items before it', async () => {
    const p = await setup();
    const stamp = await p.stamp();
    const r = p.apply([
      async (_a, ctx) => {
        await work(ctx.uow, 'bulk-first');
        return { metadata: withThings(ctx, { name: 'c' }), response: 'ok' };
      },
      () => {
        throw new SvcError('not-exists', 'no such thing', { path: '$.args[1].args' });
      },
    ]);
    await expect(r).rejects.toMatchObject({ code: 'not-exists', path: '$.args[1].args' });
    expect(await done('bulk-first')).toBe(false);
    expect(await p.stamp()).toEqual(stamp);
    expect(p.changed).toEqual([]);
  });

  it('a bulk is built, written and swapped once, on the draft its items left one after the other', async () => {
    const p = await setup();
    const before = p.state();
    const builds = p.builds();
    const seen: Metadata[] = [];
    const add = (name: string): OperationDef['run'] => (_a, ctx) => {
      seen.push(ctx.metadata);
      return { metadata: withThings(ctx, { name }), response: name };
    };
    expect(await p.apply([add('d'), add('e')], {}, [])).toEqual(['d', 'e']);
    expect(seen[1]).toEqual({ version: 3, things: [{ name: 'd' }] });
    expect(p.builds()).toBe(builds + 1);
    expect(p.state().resourceVersion).toBe(before.resourceVersion + 1);
    expect(p.changed).toHaveLength(1);
    expect(await p.stored()).toEqual({ version: 3, things: [{ name: 'd' }, { name: 'e' }] });
  });

  it('the resource_version of the envelope, then of the items of a bulk, is checked before anything runs', async () => {
    const p = await setup();
    const rv = p.state().resourceVersion;
    let ran = false;
    const run: OperationDef['run'] = () => {
      ran = true;
      return { response: 'ok' };
    };
    await expect(p.apply([run], { resource_version: rv + 1 })).rejects.toMatchObject({
      code: 'conflict',
      path: '$',
      message: `metadata resource version referenced (${rv + 1}) did not match current version`,
    });
    await expect(p.apply([run, run], {}, [{ resourceVersion: rv, path: '$.args[0]' }, { resourceVersion: rv - 1, path: '$.args[1]' }])).rejects.toMatchObject({
      code: 'conflict',
      path: '$.args[1]',
      message: `metadata resource version referenced (${rv - 1}) did not match current version`,
    });
    expect(ran).toBe(false);
    expect(await p.apply([run], { resource_version: rv }, [{ resourceVersion: rv, path: '$.args[0]' }])).toEqual(['ok']);
  });
});

describe('changes that are not metadata changes', () => {
  it('a change of the sources alone bumps the epoch, not the resource_version, and swaps', async () => {
    const p = await setup();
    const before = p.state();
    const builds = p.builds();
    const r = await p.apply([
      async (_a, ctx) => {
        await work(ctx.uow, 'ddl');
        return { reload: { sources: ['default'] }, response: 'ok' };
      },
    ]);
    expect(r).toBe('ok');
    expect(await done('ddl')).toBe(true);
    expect(p.builds()).toBe(builds + 1);
    expect(await p.stamp()).toEqual({ resourceVersion: before.resourceVersion, epoch: before.epoch + 1 });
    expect(p.state()).toMatchObject({ resourceVersion: before.resourceVersion, epoch: before.epoch + 1, metadata: before.metadata });
    expect(p.changed.map((c) => c.resourceVersion)).toEqual([before.resourceVersion]);
  });

  it('keeps its old epoch when another instance bumped the epoch meanwhile, so that the next sync rebuilds', async () => {
    const p = await setup();
    const before = p.state();
    await p.other.bumpEpoch();
    await p.apply([() => ({ reload: { sources: true }, response: 'ok' })]);
    expect((await p.stamp()).epoch).toBe(before.epoch + 2);
    expect(p.state().epoch).toBe(before.epoch);
    expect(p.state()).not.toBe(before);
  });

  it('nothing to change: no build, no catalog write, no swap, and the source work commits', async () => {
    const p = await setup();
    const before = p.state();
    const stamp = await p.stamp();
    const builds = p.builds();
    const r = await p.apply([
      async (_a, ctx) => {
        await work(ctx.uow, 'dml');
        return { metadata: ctx.metadata, response: (b: BuildResult) => b === before.build };
      },
    ]);
    expect(r).toBe(true);
    expect(await done('dml')).toBe(true);
    expect(p.builds()).toBe(builds);
    expect(await p.stamp()).toEqual(stamp);
    expect(p.state()).toBe(before);
    expect(p.changed).toEqual([]);
  });
});

describe('checkInconsistencies (the policy of build and check)', () => {
  const thing = (name: string, extra: Partial<InconsistentObject> = {}): InconsistentObject => ({ type: 'thing', name, reason: `${name} is broken`, definition: { name }, id: name, ...extra });
  const build = (...inconsistencies: InconsistentObject[]): BuildResult => ({ metadata: { version: 3 }, inconsistencies, outputs: new Map(), schemas: new Map() });
  const check = (prev: BuildResult, next: BuildResult, policy: NonNullable<OperationResult['inconsistencies']>, defined: string[] = []) => {
    try {
      checkInconsistencies(prev, next, policy, new Set(defined));
      return 'accepted';
    } catch (e) {
      const err = e as SvcError;
      return { code: err.code, status: err.status, message: err.message, path: err.path, internal: err.internal };
    }
  };
  const old = build(thing('old'));

  it('`new` judges only what the previous build did not have; `any` judges all; `allow` accepts all', () => {
    expect(check(old, build(thing('old')), 'new')).toBe('accepted');
    expect(check(old, build(thing('old'), thing('x')), 'new')).toMatchObject({ code: 'unexpected', status: 400, message: 'cannot continue due to new inconsistent metadata', internal: [{ name: 'x' }] });
    expect(check(old, build(thing('old')), 'any')).toMatchObject({ code: 'unexpected', message: 'cannot continue due to inconsistent metadata', internal: [{ name: 'old' }] });
    expect(check(old, build(thing('old'), thing('x')), 'allow')).toBe('accepted');
  });

  it('an object with its own error wins, then the objects the operation defines, then the generic error', () => {
    const fatal = thing('f', { error: { code: 'unexpected', status: 500 } });
    expect(check(old, build(thing('x'), fatal), 'new', ['x'])).toEqual({ code: 'unexpected', status: 500, message: 'f is broken', path: '$.args', internal: undefined });
    expect(check(old, build(thing('x'), thing('y'), thing('z')), 'new', ['x', 'z'])).toEqual({
      code: 'invalid-configuration',
      status: 400,
      message: 'x is broken, z is broken',
      path: '$.args',
      internal: [
        { type: 'thing', name: 'x', reason: 'x is broken', definition: { name: 'x' } },
        { type: 'thing', name: 'z', reason: 'z is broken', definition: { name: 'z' } },
      ],
    });
    // An object the operation defines that was already inconsistent is not its fault under `new`.
    expect(check(old, build(thing('old'), thing('y')), 'new', ['old'])).toMatchObject({ code: 'unexpected', internal: [{ name: 'y' }] });
  });
});
